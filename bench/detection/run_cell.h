// Runs one synthetic cell: generates the noisy job, writes its ground truth, and feeds every
// rank's summary to an OnlineAnalyzer one step at a time, as rank 0 receives them, with the
// analyzer's own outputs (verdict JSONL, report) in the cell's folder.
#pragma once

#include <string>

#include "matrix.h"

namespace sp::bench::detection {

struct CellRun {
  double generate_s = 0, analyze_s = 0;  // wall time
  uint64_t steps_analyzed = 0, steps_skipped = 0;
  std::string last_error;
};

// The job is generated `piece_steps` steps at a time (NoisyScenario::first_step).
CellRun run_cell(const Cell& cell, const std::string& dir, int warmup, int piece_steps = 25);

}  // namespace sp::bench::detection
