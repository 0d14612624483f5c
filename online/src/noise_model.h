// The job's own jitter, learned from the window: how much ops that do the same work (same ideal
// key, same stage, this step) differ from each other, per key. It is what the "no rank is
// special" null draws from (SlowdownAnalysis::null_draw): every op at its ideal value, plus
// jitter of this size, on whichever rank it falls.
//
// Why per (key, stage) residuals around this step's median: the ideal of a compute key is the
// mean over every stage (a heavier stage is re-balanced), and a slowdown shared by every rank
// is followed by the ideal (IdealConfig::follow_step_level); neither is jitter. What is left,
// op against its peers in the same step, is. The scale is a median absolute deviation over the
// window (1.4826 x MAD = sd for a normal), so a straggler among the peers (one rank in four, a
// slow rank: its residuals are all large) widens it only by the shift of a median, not by its
// own lateness.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "step_model.h"

namespace sp::online {

struct NoiseSpread {
  std::vector<double> work_sigma;   // per StepModel::ideal_keys: sd of log(duration); 0: none
  std::vector<double> delay_sigma;  // per StepModel::delay_keys: sd of the launch delay (s)
};

class NoiseWindow {
 public:
  explicit NoiseWindow(int window_steps) : window_steps_(window_steps) {}
  // This step's residuals (recorded durations and launch delays of `model`).
  void push(const StepModel& model);
  void pop_back() {
    if (!steps_.empty()) steps_.pop_back();
  }
  NoiseSpread spread(const StepModel& model) const;

  // At most this many residuals per key and step are kept (evenly spread over the peers), so
  // the window's memory and the per-step median cost do not grow with the job.
  static constexpr size_t kMaxPerKey = 64;

 private:
  struct StepResiduals {
    std::map<std::string, std::vector<float>> work, delay;
  };
  int window_steps_;
  std::deque<StepResiduals> steps_;
};

// sd estimate 1.4826 x median(|x - median(x)|) of `v` (reordered); 0 when empty.
double mad_sigma(std::vector<double>* v);

}  // namespace sp::online
