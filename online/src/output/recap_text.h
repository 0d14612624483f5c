// The periodic recap for people: causes over the recent steps and the heatmap of mean
// S_w per worker (the per-step log line is log_line.cpp's).
#pragma once

#include <deque>
#include <string>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

// Mean S_w per (stage, dp rank) cell over the given verdicts; cells without ranks are NaN.
struct WorkerGrid {
  int dp_size = 0, pp_size = 0;
  std::vector<double> mean;  // [stage * dp_size + dp]
  int steps = 0;
};
WorkerGrid mean_worker_grid(const std::deque<StepVerdict>& verdicts);

std::string format_recap(const std::deque<StepVerdict>& recent, uint64_t skipped_total);

}  // namespace sp::online
