// `straggler-probe analyze-dir DIR`: the offline half of the LD_PRELOAD path for ranks without
// Python. Each such rank wrote DIR/rank<R>.spsum (STRAGGLER_PROBE_OUT_DIR); this command runs
// rank 0's online analysis (sp_online's OnlineAnalyzer) over them afterwards, printing the same
// per-step lines and writing the same report as a live run.
#pragma once

#include <string>
#include <vector>

#include "straggler_probe/online/setting_defaults.h"

namespace CLI {
class App;
}

namespace sp::cli {

struct AnalyzeDirArgs {
  std::string dir;                 // the STRAGGLER_PROBE_OUT_DIR of the run
  std::string out;                 // report directory; empty: DIR/report
  std::vector<std::string> steps;  // raw --steps tokens
  bool quiet = false;              // no per-step lines, only the closing summary and report line
  // a text summary every N steps (the live default); 0: none
  int summary_interval = online::setting_defaults::kSummaryInterval;
  // S below this names nothing, a user override (1.0: off; STRAGGLER_PROBE_SLOWDOWN_THRESHOLD live)
  double slowdown_threshold = online::setting_defaults::kSlowdownThreshold;
  // steps the ideal durations are estimated over (..._WINDOW_STEPS)
  int window_steps = online::setting_defaults::kWindowSteps;
  // per-step level of the noise model's tests (..._SIGNIFICANCE)
  double significance = online::setting_defaults::kSignificance;
  // the alarms' level (..._ALARM_SIGNIFICANCE)
  double alarm_significance = online::setting_defaults::kAlarmSignificance;
  // ranks drawn in timeline.json; 0: within 16 MiB (..._TIMELINE_RANKS)
  int timeline_ranks = online::setting_defaults::kTimelineRanks;
};

// Registers the subcommand and its options on `app`, filling `args` when parsed.
CLI::App* add_analyze_dir_command(CLI::App& app, AnalyzeDirArgs& args);

// Runs it; returns the exit code. Bad input surfaces as BadInput (see main.cpp).
int run_analyze_dir(const AnalyzeDirArgs& args);

}  // namespace sp::cli
