// AnalysisDriver: what both callers of rank 0's analysis share, the live analysis thread
// (rank_pipeline/src/pipeline/analysis_worker.cpp) and `straggler-probe analyze-dir`
// (cli/analyze_dir/analyze_dir_command.cpp): the OnlineAnalyzer set up from the user's settings, where its
// lines go, whole steps in (each caller assembles steps with its own StepAssembler,
// step_assembly.h) and the steps given up before the analysis, the health check (one warning when
// the probe sees nothing useful, and report.json's "health" section saying why), and the report
// with its closing line.
//
// Thread-compatible, like the analyzer: one thread drives an instance. Nothing throws out.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/online/setting_defaults.h"
#include "straggler_probe/step_summary.h"

namespace sp::online {

// The analysis's user-facing settings (docs/CONFIG.md: STRAGGLER_PROBE_SLOWDOWN_THRESHOLD,
// _SIGNIFICANCE, _ALARM_SIGNIFICANCE, _WINDOW_STEPS, _RECAP_INTERVAL, _LOG_LINES, _OUT_DIR;
// analyze-dir's options of the same names).
struct AnalysisSettings {
  int world_size = 1;
  std::string out_dir;            // JSONL and report; "" = no files
  bool log_lines = setting_defaults::kLogLines;  // per-step lines and periodic summaries
  // CauseThresholds::none_below: a user override, 1.0 = off
  double slowdown_threshold = setting_defaults::kSlowdownThreshold;
  double significance = setting_defaults::kSignificance;             // NoiseConfig::alpha
  double alarm_significance = setting_defaults::kAlarmSignificance;  // NoiseConfig::alarm_alpha
  int window_steps = setting_defaults::kWindowSteps;
  int recap_interval = setting_defaults::kRecapInterval;
  bool replace_jsonl = false;     // analyze-dir: a rerun replaces the JSONL; a live run appends
  // Share of one core the analysis may use (OnlineConfig::cpu_budget; 0 = no budget): the live
  // thread shares rank 0's CPU with training, analyze-dir has the machine to itself.
  double cpu_budget = 0;
  // OnlineConfig::hang_after_s / hang_multiple: the hang bound
  double hang_after_s = setting_defaults::kHangAfterS;
  double hang_multiple = setting_defaults::kHangMultiple;
  // OnlineConfig::timeline_ranks: timeline.json's ranks (0: by bytes)
  int timeline_ranks = setting_defaults::kTimelineRanks;
  std::function<OnlineConfig::SilentRanks()> silent_ranks;  // OnlineConfig::silent_ranks
};

using LineSink = std::function<void(const std::string&)>;

class AnalysisDriver {
 public:
  // print: the per-step lines, summaries and the report line; warn: the health warning (one
  // line, without a prefix: the sink adds its own).
  AnalysisDriver(AnalysisSettings settings, LineSink print, LineSink warn);
  ~AnalysisDriver();
  AnalysisDriver(const AnalysisDriver&) = delete;
  AnalysisDriver& operator=(const AnalysisDriver&) = delete;

  // A complete step (by_rank[r] = rank r's summary), analysed. Returns its verdict.
  std::vector<StepVerdict> analyze_step(int64_t step, std::vector<runtime::StepSummary> by_rank);
  // Steps given up before the analysis: one line, counted and classified.
  std::vector<StepVerdict> skip_steps(int64_t first, int64_t last, const std::string& kind,
                                      const std::string& reason);
  // End of the run: closes what the analyzer holds; the health check runs if it has not yet.
  void finish();

  // The report with `options`' sections and files, plus "health". A final report that was
  // written prints its closing line ("straggler_probe report: <files>"); one that was not prints
  // "straggler_probe report: not written: <why>".
  Status write_report(ReportOptions options);

  // Where each rank runs (OnlineAnalyzer::set_rank_table): verdicts then name hosts.
  void set_rank_table(RankTable table);

  const OnlineAnalyzer& analyzer() const;
  // New significance levels from the next step on (OnlineAnalyzer::set_significance).
  void set_significance(double significance, double alarm_significance);
  const AnalysisSettings& settings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sp::online
