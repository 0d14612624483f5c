// Evidence for sequence-length imbalance: does compute time track the micro-batches' sum of
// squared sequence lengths (attention is quadratic)? Without length annotations, the paper's
// proxy: forward and backward durations of the same micro-batch rise and fall together.
#pragma once

#include <deque>
#include <optional>
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
    evidence_.reset();
  }
  // Of the window as it is now; computed once per window (a step asks twice: the cause rules
  // and the noise model, ~19 M instructions each at 4096 ranks dp x pp).
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
  SeqEvidence compute_evidence() const;
  int window_;
  std::deque<Step> steps_;
  mutable std::optional<SeqEvidence> evidence_;  // evidence() of steps_ as they are
};

// Pearson correlation; 0 when fewer than 3 points or no variance.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace sp::online
