// Evidence for sequence-length imbalance: does compute time track the micro-batches' sum of
// squared sequence lengths (attention is quadratic)? Without length annotations, the paper's
// proxy: forward and backward durations of the same micro-batch rise and fall together.
#pragma once

#include <deque>
#include <vector>

#include "step_model.h"

namespace sp::online {

struct SeqEvidence {
  double seq_corr = 0;      // Pearson r(compute, sum seq_len^2), pooled over the window
  double seq_corr_linear = 0;  // r(compute, sum seq_len): short sequences are nearly linear
  double cost_cv = 0;       // coefficient of variation of sum seq_len^2
  int seq_samples = 0;
  double fb_corr = 0;       // Pearson r(forward, backward) per micro-batch
  int fb_samples = 0;
};

class SeqWindow {
 public:
  explicit SeqWindow(int window_steps) : window_(window_steps) {}
  void push(const StepModel& model);
  void pop_back() {
    if (!steps_.empty()) steps_.pop_back();
  }
  // Of the window as it is now (~19 M instructions at 4096 ranks dp x pp: a step computes it
  // once, StepAnalysis::analyze, for the cause rules and the noise model both).
  SeqEvidence evidence() const;

 private:
  struct Sample {
    int stage;
    double x, y;  // seq: (cost, compute); fb: (forward, backward)
    double x_linear = 0;
  };
  struct Step {
    std::vector<Sample> seq, fb;
  };
  int window_;
  std::deque<Step> steps_;
};

// Pearson correlation; 0 when fewer than 3 points or no variance.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace sp::online
