// What the analysis has seen and done so far (OnlineAnalyzer::stats(), report.json's "stats"):
// summaries received and refused, steps analysed and skipped with their reasons, ops clamped or
// superseded by a better source, the analysing thread's CPU time.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace sp::online {

struct OnlineStats {
  uint64_t summaries_received = 0;
  uint64_t summaries_rejected = 0;   // malformed on their own (bad rank, bad times...)
  uint64_t summaries_late = 0;       // for a step already analysed or skipped
  uint64_t summaries_duplicate = 0;
  uint64_t steps_analyzed = 0;
  uint64_t steps_skipped = 0;        // incomplete, malformed or failed (see skip_reasons)
  uint64_t analysis_errors = 0;      // unexpected exceptions caught inside the analysis
  uint64_t ops_clamped = 0;          // negative launch delays / transfers clamped to zero
  uint64_t ops_ignored = 0;          // kernel/memcpy records the step model does not use
  // One op, one source: ops timed twice (CPU and CUPTI, c10d hooks and NCCL...) are modelled
  // once, with the better source; the other records are counted here, by "kind: lesser <
  // chosen", and lesser-source compute ops kept because the better source lacked them.
  uint64_t ops_superseded = 0;
  uint64_t ops_kept_without_better_source = 0;
  std::map<std::string, uint64_t> ops_superseded_by;
  std::map<std::string, uint64_t> skip_reasons;  // reason kind -> count
  // CPU time of the analysing thread spent analysing complete steps (seconds): in total and
  // the largest for one step.
  double analysis_cpu_s = 0;
  double analysis_cpu_max_s = 0;
  std::string last_error;
};

}  // namespace sp::online
