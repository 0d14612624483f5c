// The job's own jitter, learned from the window: how much ops that do the same work (same ideal
// key, same stage, this step) differ from each other, per key. It is what the "no rank is
// special" null draws from (SlowdownAnalysis::null_draw): every op at its ideal value, plus
// jitter of this size, on whichever rank it falls.
//
// Why residuals against each rank's own recent mean, then against the step's peers: the
// ideal of a compute key is the mean over every stage (a heavier stage is re-balanced), and a
// slowdown shared by every rank is followed by the ideal (IdealConfig::follow_step_level);
// neither is jitter, and neither is a rank that is slow on every step (a straggler: the tests
// are there to find it, the null must not learn it as noise). What is left, an op against its
// own rank's usual and its peers' this step, is. The scale is a median absolute deviation over
// the window (1.4826 x MAD = sd for a normal), so a rank slow on some steps only (gc, an
// intermittent straggler) widens it only by the shift of a median.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "model/step_model.h"
#include "replay/noise_spread.h"

namespace sp::online {

// One value (log duration or launch delay) of one op of a rank the window follows.
struct NoiseSample {
  std::string key;
  int rank, stage;
  double value;
  bool shared = false;  // a transfer: every member of its group shares it (no peer reference)
};

class NoiseWindow {
 public:
  explicit NoiseWindow(int window_steps) : window_steps_(window_steps) {}
  // This step's residuals (recorded durations and launch delays of `model`).
  void push(const StepModel& model);
  void pop_back();
  // excluded: per rank, 1 to leave its residuals out (the ranks of the unit the persistence
  // test found leading: a culprit's own scatter is not the job's jitter); nullptr: none. A key
  // that only excluded ranks have keeps them all.
  NoiseSpread spread(const StepModel& model, const std::vector<char>* excluded = nullptr) const;

  // At most this many residuals per key and step are kept (evenly spread over the peers), so
  // the window's memory and the per-step median cost do not grow with the job.
  static constexpr size_t kMaxPerKey = 64;

 private:
  // Per key, per (kept) rank: sum of its values and their number.
  using Sums = std::map<std::string, std::map<int, std::pair<double, double>>>;
  using Totals = Sums;
  // Per key, the residuals and the rank of each.
  struct Residuals {
    std::vector<float> value;
    std::vector<int> rank;
  };
  struct StepResiduals {
    std::map<std::string, Residuals> work, delay;
    Sums work_sums, delay_sums;
  };
  static void add_sums(const Sums& sums, Totals* totals, double sign);
  static void residuals(const std::vector<NoiseSample>& samples, const Totals& totals,
                        std::map<std::string, Residuals>* out, Sums* sums);
  int window_steps_;
  std::deque<StepResiduals> steps_;
  Totals work_totals_, delay_totals_;  // over the steps in the window
};

}  // namespace sp::online
