// OnlineAnalyzer: rank 0's live what-if analysis of per-step summaries from every rank.
//
// Thread-compatible: one thread (the probe's background thread) drives an instance; calls from
// several threads need the caller's lock. No public function throws: failures become a skipped
// step with a reason, an error Status, or a counter in stats().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "straggler_probe/online/config.h"
#include "straggler_probe/online/rank_table.h"
#include "straggler_probe/online/verdict.h"
#include "straggler_probe/step_summary.h"

namespace sp::online {

struct Status {
  bool ok = true;
  std::string message;
};

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
  // One op, one source: ops timed twice (host and CUPTI, c10d hooks and NCCL...) are modelled
  // once, with the better source; the other records are counted here, by "kind: lesser <
  // chosen", and lesser-source compute ops kept because the better source lacked them.
  uint64_t ops_superseded = 0;
  uint64_t ops_kept_without_better_source = 0;
  std::map<std::string, uint64_t> ops_superseded_by;
  std::map<std::string, uint64_t> skip_reasons;  // reason kind -> count
  std::string last_error;
};

class OnlineAnalyzer {
 public:
  explicit OnlineAnalyzer(OnlineConfig config);
  ~OnlineAnalyzer();
  OnlineAnalyzer(const OnlineAnalyzer&) = delete;
  OnlineAnalyzer& operator=(const OnlineAnalyzer&) = delete;

  // Takes one rank's summary of one step. Returns the verdicts of every step this completes or
  // gives up on (skipped steps come back with analyzed=false and a reason), oldest first.
  std::vector<StepVerdict> add(runtime::StepSummary summary);
  // Closes all pending steps (end of training): complete ones are analysed, the rest skipped.
  std::vector<StepVerdict> finish();
  // Where each rank runs (the rank pipeline sends it once): later verdicts name the worst rank's
  // host and GPU; the JSONL gets one {"rank_table": [...]} record, report.json a "ranks" table.
  void set_rank_table(RankTable table);

  // The periodic text summary with the dp-rank x stage heatmap of S_w over recent steps.
  std::string summary_text() const;
  // report.json, timeline.json (Perfetto, real vs ideal of the last steps), heatmap.svg.
  Status write_report(const std::string& dir) const;

  OnlineStats stats() const;
  const OnlineConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=stage-imbalance worst=stage:3
//  S_w=1.23 top_op=forward-compute host=1.2% evidence="..."` (a worst rank with a known place:
//  `worst=rank:1234 host=node-157 gpu=3`); a skipped step:
// `straggler_probe step=121 skipped reason="..."`.
std::string format_log_line(const StepVerdict& v);

}  // namespace sp::online
