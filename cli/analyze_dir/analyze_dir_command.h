// `straggler-probe analyze-dir DIR`: the offline half of the LD_PRELOAD path for ranks without
// Python. Each such rank wrote DIR/rank<R>.spsum (STRAGGLER_PROBE_OUT_DIR); this command runs
// rank 0's online analysis (sp_online's OnlineAnalyzer) over them afterwards, printing the same
// per-step lines and writing the same report as a live run.
#pragma once

#include <string>
#include <vector>

#include "straggler_probe/online/analysis_driver.h"

namespace CLI {
class App;
}

namespace sp::cli {

struct AnalyzeDirArgs {
  std::string dir;                 // the STRAGGLER_PROBE_OUT_DIR of the run
  std::string out;                 // report directory; empty: DIR/report
  std::vector<std::string> steps;  // raw --steps tokens
  bool quiet = false;              // no per-step lines, only the closing recap and report line
  // The live analysis's settings, the flags filling those a user sets (--threshold, --window,
  // --significance, --alarm-significance, --recap-interval, --timeline-ranks: the live run's
  // STRAGGLER_PROBE_* of the same meaning); the world size, report directory and lines come from
  // the run's files, DIR/--out and --quiet.
  online::AnalysisSettings analysis;
};

// Registers the subcommand and its options on `app`, filling `args` when parsed.
CLI::App* add_analyze_dir_command(CLI::App& app, AnalyzeDirArgs& args);

// Runs it; returns the exit code. Bad input surfaces as BadInput (see main.cpp).
int run_analyze_dir(const AnalyzeDirArgs& args);

}  // namespace sp::cli
