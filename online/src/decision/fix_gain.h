// What fixing one dp rank would save the step, tested against what it saves when no rank is
// special: the worker rule's test that a rank costs the job more than jitter does
// (noise_verdict.cpp).
//
// Why a gain and not only a score: a rank's score S_w (only its ops real) says how late it is
// on its own, not what the job gets back by replacing it. The two part where ranks are late
// together: a host whose GPUs all drift a little slow makes each of its ranks late, yet fixing
// one of them saves nothing, its siblings finishing as late. The gain (the paper's fix-only
// scenario: one dp rank fixed, every other op real; slowdown_metrics.h) is what a user acts on.
//
// Jitter alone has a gain too: fixing the slowest of N jittered ranks saves the gap to the next
// slowest, which the null draws measure at the job's size and shape (NullDraw::best_fix_gain).
// That gap is skewed (by the extreme-value law the top spacing of many draws from a light,
// Gumbel-type tail is exponential; of two draws, half-normal), so the null's best gain is taken
// as a gamma law matched to the pool's mean and variance (shape 1 for an exponential). It is
// not widened as the lateness tests are (significance.h): the gain test asks whether a rank
// costs more than the model's jitter does, as the step's S band does, and widening it would
// let a noisy job hide a real straggler's cost. Then:
// - this step: P(null best gain >= g);
// - over the last k steps: P(sum of k null best gains >= the unit's sum), a gamma law too
//   (shape k times). A rank slow one step in four still gains on average what it costs.
// Both compare a unit with the *best* of the null's units, so they need no correction for N.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace sp::online {

class FixGains {
 public:
  // pool_steps: null draws kept (the noise window); history_steps: observed steps kept.
  FixGains(int pool_steps, int history_steps) : pool_steps_(pool_steps), history_steps_(history_steps) {}

  void add_null(double best_gain);
  // This step's gain per dp rank (SlowdownMetrics::dp_fix_gain).
  void add_observed(const std::vector<double>& gains);
  // Smallest gain that counts, and smallest null scale: the replay's time resolution relative
  // to the step (two replays closer than that are the same step).
  void set_floor(double f) { floor_ = f; }

  // Mean of the null's best gains (0 without draws).
  double null_mean() const;
  // Mean gain of unit u over its last k observed steps (fewer when fewer were seen; a step
  // without the unit counts 0).
  double recent_mean(size_t u, int k) const;
  // The two tests above (1 before any step is seen).
  double step_p(size_t u) const;
  double window_p(size_t u, int k) const;

 private:
  // The null's gamma law: shape and scale, from the pool's moments.
  struct Law {
    double shape = 1, scale = 0;
  };
  Law law() const;
  int pool_steps_, history_steps_;
  double floor_ = 1e-9;
  std::deque<double> null_;
  std::deque<std::vector<float>> history_;  // newest last
};

// P(Gamma(shape a, scale 1) >= x), the regularised upper incomplete gamma Q(a, x), a > 0.
double gamma_upper(double a, double x);

}  // namespace sp::online
