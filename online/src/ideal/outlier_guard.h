// Who the ideal window leaves out of a compute (or launch-delay) mean: the persistent outliers,
// workers slow rather than doing more work (ideal_window.cpp says why the mean needs a guard).
//
// A worker whose window-mean duration per op sits far above its stage's median (beyond a MAD
// bound, with relative and absolute floors so that timer noise never counts: IdealConfig's
// outlier_* fields) is left out; with 2 workers the faster one is the reference. Averaging over
// the window first makes the test about persistent slowness: one long micro-batch is not it.
//
// Work that differs is not slowness. When the micro-batches' sequence lengths are known
// (seq_lens annotations), a rank's durations are compared per unit of work instead: work =
// a x sum(len) + b x sum(len^2), fitted over the window's annotated ops of the key (fit_work),
// so that a rank whose window happened to bring the longest sequences (long-tailed lengths
// with 2 ranks per stage: 5-10% more work over 20 steps is common) keeps its work in the mean.
// Left that out, the ideal was the lighter rank's work and S 13.8% above the measured
// slowdown (bench/README.md, dp2xpp2 seq-lens). The fit takes every annotated op of the key,
// a slow rank's too: it assumes the lengths are not tied to ranks (they are drawn per batch),
// else a slow rank always fed the longest sequences would bend the fit towards itself.
#pragma once

#include <set>
#include <vector>

#include "ideal_window.h"

namespace sp::online {

// One rank-step of a key with its work known: the durations' sum and the sequence lengths'.
struct WorkPoint {
  double duration = 0, len = 0, len_sq = 0;
};
// Work = a x sum(len) + b x sum(len^2): least squares through the origin over the points, both
// coefficients >= 0 (else the better single term). {0, 0}: no fit (too few points, no spread).
struct WorkFit {
  double a = 0, b = 0;
  bool usable() const { return a > 0 || b > 0; }
  double work(double len, double len_sq) const { return a * len + b * len_sq; }
};
WorkFit fit_work(const std::vector<WorkPoint>& points);

// Per rank (dense, indexed by rank), what the guard reads and marks. `work_*`: over the
// window's annotated steps only, the durations, the sums of sum(len) and sum(len^2), and the
// number of ops (all zero, or `fit` unusable: compare per op).
struct GuardArrays {
  const std::vector<double>& sum;    // over the window
  const std::vector<double>& count;
  const std::vector<int>& ranks;     // with ops under the key, ascending
  const std::vector<int>& rank_stage;
  const WorkFit& fit;
  const std::vector<double>& work_duration;
  const std::vector<double>& work_len;
  const std::vector<double>& work_len_sq;
  const std::vector<double>& work_count;
  std::vector<char>& dropped;
  std::set<int>& excluded;
};

void drop_persistent_outliers(const IdealConfig& cfg, GuardArrays g);

}  // namespace sp::online
