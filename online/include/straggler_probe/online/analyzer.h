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
  // CPU time of the analysing thread spent analysing complete steps (seconds): in total and
  // the largest for one step.
  double analysis_cpu_s = 0;
  double analysis_cpu_max_s = 0;
  std::string last_error;
};

// What write_report adds to the analysis's own report, and whether it is the last one.
struct ReportOptions {
  // false: written while the job runs. report.json's run.complete is false and the heatmap and
  // the timeline say "partial"; a job cut short (SIGTERM, SIGKILL) keeps the last such report.
  bool final = true;
  // false: timeline.json is left as it is (while the job runs, the large timeline of a large job
  // is rewritten less often than the rest, rank_pipeline/src/pipeline/analysis_worker.cpp).
  bool write_timeline = true;
  // More top-level sections of report.json (clock offsets, capture status...), in this order.
  nlohmann::ordered_json sections = nlohmann::ordered_json::object();
  // More files of the report directory: (file name, content).
  std::vector<std::pair<std::string, std::string>> files;
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

  // The periodic text summary with the dp-rank x stage heatmap of S_w over recent steps.
  std::string summary_text() const;
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

// `straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=stage-imbalance worst=stage:3
//  S_w=1.23 top_op=forward-compute host_gaps=1.2% evidence="..."` (a worst rank with a known place:
//  `worst=rank:1234 host=node-157 gpu=3`); a skipped step:
// `straggler_probe step=121 skipped reason="..."`.
std::string format_log_line(const StepVerdict& v);
// `straggler_probe step=12 skipped reason="..."` or, for a range, `step=12-15`; the reason
// quoted and escaped. The one formatter of skipped lines (format_log_line uses it).
std::string format_skipped_line(int64_t first, int64_t last, const std::string& reason);

}  // namespace sp::online
