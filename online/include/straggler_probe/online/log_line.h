// The per-step log line rank 0 prints, and the line of a skipped step: the one formatter of
// both (the live analysis, analyze-dir and the tests use them).
#pragma once

#include <cstdint>
#include <string>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

// `straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=stage-imbalance worst=stage:3
//  S_w=1.23 top_op=forward-compute cpu_gaps=1.2% evidence="..."` (a worst rank with a known place:
//  `worst=rank:1234 host=node-157 gpu=3`); a skipped step:
// `straggler_probe step=121 skipped reason="..."`.
std::string format_log_line(const StepVerdict& v);
// `straggler_probe step=12 skipped reason="..."` or, for a range, `step=12-15`; the reason
// quoted and escaped. The one formatter of skipped lines (format_log_line uses it).
std::string format_skipped_line(int64_t first, int64_t last, const std::string& reason);

}  // namespace sp::online
