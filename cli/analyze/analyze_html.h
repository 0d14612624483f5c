// report.html for `analyze` (the offline engine on a trace): the same page as the live report
// (straggler_probe/online/html_report.h), from the analysis' per-step results.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "straggler_probe/whatif/analysis.h"

namespace sp::cli {

// `lost`: the offline ledger (report.json's "lost" keys) when the caller computed one; without it
// the page's ledger is the traced time over the ideal, times the GPUs, unattributed.
std::string analyze_html_page(const whatif::AnalysisResult& r, const nlohmann::ordered_json& lost = nullptr);

// Writes the page to `path` (replacing an earlier run's); throws std::runtime_error on failure.
void write_report_html(const std::filesystem::path& path, const std::string& page);

}  // namespace sp::cli
