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
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/config.h"
#include "straggler_probe/online/log_line.h"
#include "straggler_probe/online/online_stats.h"
#include "straggler_probe/online/rank_table.h"
#include "straggler_probe/online/report_options.h"
#include "straggler_probe/online/verdict.h"
#include "straggler_probe/step_summary.h"

namespace sp::online {

struct Status {
  bool ok = true;
  std::string message;
};

class OnlineAnalyzer {
 public:
  explicit OnlineAnalyzer(OnlineConfig config);
  ~OnlineAnalyzer();
  OnlineAnalyzer(const OnlineAnalyzer&) = delete;
  OnlineAnalyzer& operator=(const OnlineAnalyzer&) = delete;

  // Takes one rank's summary of one step. Returns the verdicts of every step this completes or
  // gives up on (skipped steps come back with analyzed=false and a reason), oldest first. Which
  // steps are complete or given up is decided by a StepAssembler (step_assembly.h).
  std::vector<StepVerdict> add(runtime::StepSummary summary);
  // Closes all pending steps (end of training): complete ones are analysed, the rest skipped.
  std::vector<StepVerdict> finish();
  // Where each rank runs (the rank pipeline sends it once): later verdicts name the worst rank's
  // host and GPU; the JSONL gets one {"rank_table": [...]} record, report.json a "ranks" table.
  void set_rank_table(RankTable table);

  // For a caller that assembles steps itself (rank 0's collector, analyze-dir: one StepAssembler
  // each): a whole step, by_rank[r] being rank r's summary. A summary that is not rank r's of
  // this step in this world skips the step as malformed. Use add() or these, not both.
  std::vector<StepVerdict> add_step(int64_t step, std::vector<runtime::StepSummary> by_rank);
  // Steps given up before the analysis (kind "incomplete", "malformed", "behind"...): one log
  // line for the range, and per step one JSONL record and one count in stats().
  std::vector<StepVerdict> skip_steps(int64_t first, int64_t last, const std::string& kind,
                                      const std::string& reason);

  // The periodic recap with the dp-rank x stage heatmap of S_w over recent steps.
  std::string recap_text() const;
  // The ledger over the run (src/ledger.h): "lost 3.2% of GPU time (...): 2.1% worker on node-17
  // gpu 3 (rank 5), ..."; "" before any analysed step.
  std::string lost_text() const;
  // report.json, timeline.json (Perfetto, real vs ideal of the last steps), heatmap.svg and
  // options.files, each replaced whole (a temporary file renamed), so never half-written.
  Status write_report(const std::string& dir, const ReportOptions& options = {}) const;

  OnlineStats stats() const;
  const OnlineConfig& config() const;
  // New significance levels (NoiseConfig::alpha, alarm_alpha) from the next step on, while the
  // job runs (rank 0's POST /control); the report's config shows them.
  void set_significance(double alpha, double alarm_alpha);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sp::online
