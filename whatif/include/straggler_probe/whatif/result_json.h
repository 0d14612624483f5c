// result.json / ms.json / mw.json with the artifact's keys, nesting and ordering.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "straggler_probe/whatif/analysis.h"

namespace sp::whatif {

// The artifact's AnalyzerResult as JSON: job_meta, step_t_base/nodelay/noblk, launch_slowdown,
// blocking_slowdown, blocking/launch_step_slowdown, then the attributions (null when skipped).
// Integer keys (steps, ranks, stages) are strings, as Python's json writes them.
nlohmann::ordered_json result_to_json(const AnalysisResult& result);

// {trem, tadd, tori, tideal, rem, add, Ms} and {..., Mw}.
nlohmann::ordered_json ms_to_json(const SlowdownExplanation& ms);
nlohmann::ordered_json mw_to_json(const SlowdownExplanation& mw);

// Writes `json` to `path` with the artifact's indentation (result.json: 2, ms/mw.json: 4).
// Throws std::runtime_error naming the path when it cannot be written.
void write_json_file(const nlohmann::ordered_json& json, const std::string& path, int indent);

}  // namespace sp::whatif
