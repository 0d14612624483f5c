// The sliding window of recent analysed steps and the ideal (straggler-free) durations it gives:
// mean for compute, median of the transfer time for communication, and a per-slot mean for
// pauses (gc, data-wait) that only some ranks have in some steps.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "straggler_probe/online/config.h"
#include "model/step_model.h"
#include "transfer_reference.h"

namespace sp::online {

// What the ranks did under one key in one step. Sparse: only the ranks with an op under the key
// (a key is one stage's, one group's, one piece's: at 4096 ranks a dense per-rank array per key
// and step made the window ~20x larger and its sums ~8x slower, mostly adding zeros).
struct KeyStats {
  IdealRule rule = IdealRule::kMean;
  std::vector<int> ranks;         // ascending
  std::vector<double> sum;        // per entry of `ranks`: total own duration (or delay)
  std::vector<uint32_t> count;    // per entry of `ranks`: number of ops (>= 1)
  std::vector<double> samples;    // median rule: every transfer time
  // Compute keys whose ops all carry their micro-batch's sequence lengths (a seq_lens
  // annotation): per entry of `ranks`, the sums of sum(len) and sum(len^2). Empty otherwise.
  bool work_known = true;
  std::vector<double> len, len_sq;
};

struct StepSamples {
  int64_t step = 0;
  int world = 0;
  std::vector<int> rank_stage;
  std::map<std::string, KeyStats> durations;  // by ideal key
  std::map<std::string, KeyStats> delays;     // by delay key
};

StepSamples collect_samples(const StepModel& model);

struct Ideals {
  std::vector<double> duration;   // per StepModel::ideal_keys entry (slot mean: per rank-step)
  std::vector<double> delay;      // per StepModel::delay_keys entry
  std::vector<int> excluded_ranks;  // left out of some compute mean as persistent outliers
  // Each transfer key's window this step (IdealWindow::remember takes them in).
  std::vector<std::pair<std::string, TransferReference::Window>> transfer_windows;
};

class IdealWindow {
 public:
  // reference_alpha: the level of the transfer reference's test (transfer_reference.h; the
  // noise model's alpha), 0: off.
  explicit IdealWindow(IdealConfig config, double reference_alpha = 0)
      : config_(config), reference_(reference_alpha) {}
  void push(StepSamples samples);
  void pop_back() {
    if (!steps_.empty()) steps_.pop_back();
  }
  // Ideal values for every key of `model`, from the steps in the window.
  Ideals ideals(const StepModel& model) const;
  size_t size() const { return steps_.size(); }
  // After the step's analysis: its transfer windows update their keys' references.
  void remember(const Ideals& ideals) {
    for (const auto& [key, w] : ideals.transfer_windows) reference_.remember(key, w);
  }

 private:
  struct Scratch;  // per-rank sums over the window of one key at a time (ideal_window.cpp)
  double aggregate(const std::string& key, bool is_delay, const StepModel& m, Scratch* s) const;
  void guard(const StepModel& m, Scratch* s) const;
  double transfer_ideal(const std::string& key, double window_median, Scratch* s) const;
  void window_sums(int world, Scratch* s) const;
  double step_level(const std::string& key, bool is_delay, const Scratch& s) const;
  IdealConfig config_;
  TransferReference reference_;
  std::deque<StepSamples> steps_;
  // Each step's transfer samples (median rule) are sorted when it is pushed, so that a key's
  // median over the window is selected from its 20 sorted runs (median_of_runs) instead of
  // gathering them (~10 k per pipeline transfer key at 4096 ranks) and selecting anew: ~90 M
  // instructions a step. Off for good (the gathering path) if a sample is ever NaN, negative
  // or -0, which the bisection over the values' bit patterns cannot order.
  bool runs_usable_ = true;
};

}  // namespace sp::online
