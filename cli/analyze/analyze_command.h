// `straggler-probe analyze`: load a trace, run the what-if analysis, write the reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sp::cli {

struct AnalyzeArgs {
  std::string trace;   // CSV, gzip'd CSV or Parquet (detected by content)
  std::string meta;    // meta.yaml
  std::string out;     // output directory (created if missing)
  std::vector<std::string> steps;           // raw --steps tokens
  std::vector<std::string> timeline_steps;  // raw --timeline-steps tokens
  double threshold = 1.03;
};

// Registers the subcommand and its options on `app`, filling `args` when parsed.
CLI::App* add_analyze_command(CLI::App& app, AnalyzeArgs& args);

// Runs it; returns the exit code. Bad input surfaces as exceptions (see main.cpp).
int run_analyze(const AnalyzeArgs& args);

}  // namespace sp::cli
