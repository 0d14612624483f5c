// The files `analyze` writes besides the three JSON results, and the overview it prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/report_overview.h"

namespace sp::cli {

// timeline.json: the real and ideal timelines of `steps` (report_timeline.h).
void write_timeline(const std::filesystem::path& path, const whatif::TraceTable& trace, const whatif::JobMeta& meta,
                    const whatif::AnalysisResult& r, std::vector<int64_t> steps);

// heatmap.svg: S_w per worker (report_heatmap.h).
void write_heatmap(const std::filesystem::path& path, const whatif::AnalysisResult& r);

// What the printed overview shows (report_overview.h).
whatif::OverviewInput overview_input(const whatif::AnalysisResult& r, const whatif::SlowdownExplanation& ms,
                                   const std::optional<whatif::SlowdownExplanation>& mw);

}  // namespace sp::cli
