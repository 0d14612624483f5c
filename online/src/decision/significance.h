// Significance against the null (null_scenarios.cpp): how unlikely a step's S, or a unit's
// (rank's, stage's) score, is if jitter alone made it.
//
// Per step the null gives one draw of S and one of every unit's score (a unit drawn, the rest
// ideal); the window keeps the last draws, so its pools hold window x units draws of a unit's
// null score at this job's size and shape, all from a model with no special rank (a straggler
// only widens the jitter it was learned from, see noise_model.h). Unit scores are compared as
// logs relative to the step's median unit (lateness behind one's peers; a slowdown every unit
// shares is the S test's), the null's draws likewise.
//
// Three tests, each a p-value with a stated meaning:
// - S (step_S_p): P(null S >= this S), from an extreme-value (Gumbel) law fitted by moments to
//   the null draws of log S: a synchronous step ends with the slowest of N ranks, a maximum.
// - a unit this step (step_p): P(the most extreme of N null units >= this one's score): the
//   pool's own share above it, and beyond the pool's top decile an exponential tail fitted to
//   the exceedances (upper_tail); corrected for N units (Sidak).
// - a unit over the last k steps (window_p1): P(mean of k null scores >= this unit's mean), by
//   the central limit theorem with the pool's mean and sd, each step's standard score clipped
//   (see window_p1); for one unit, the caller corrects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "ideal/robust_stats.h"
#include "ideal/tail_probability.h"

namespace sp::online {

// Calibration (every test): the null is a model of the jitter, and a real job's can be wider
// or heavier-tailed (untraced gaps, the OS scheduling an oversubscribed core). So each test's
// null is widened to the job's own step-to-step dispersion when that is wider: the robust sd
// (1.4826 x MAD) of the observed scores around each unit's own median over the recent steps,
// at the upper end of its one-sided 95% confidence band, over the null's robust sd. A unit
// slow on every step (a straggler) is its own median and does not widen anything; a one-off
// step far out (a gc pause) moves a median only by one order statistic. For unit families the
// smaller of that and the sd of successive differences is taken (UnitFamily::calibrate: a rank
// that becomes slow mid-run is one large difference). Until a unit has been
// seen twice the dispersion is unknown and nothing is significant (the first analysed step
// names no one).
//
// The widening factor (>= 1; 0 when the dispersion cannot be estimated yet, dof < 1): an
// MAD-based sd from `dof` normal deviations has an asymptotic relative standard error of
// 1.1664 / sqrt(dof) (variance 1.3605 sigma^2 / n), taken as a band on its log.
double null_widening(double observed_sd, double dof, double null_sd);
// sd_upper_band and level_robust_sd (the dispersion estimates the tests and the transfer
// reference share) are in ideal/robust_stats.h, sidak and normal_upper in
// ideal/tail_probability.h.

// P(Binomial(n, q) >= k).
double binomial_upper(int k, int n, double q);

// The rank-sum test's null for one unit among N exchangeable ones: its rank among them on each
// step, 0 (least) to N - 1, is uniform and independent across steps, so the sum of its ranks over
// n steps has an exact distribution (a convolution of discrete uniforms). Above kMaxLevels units
// the rank is coarsened to kMaxLevels levels (level = rank x L / N, each level's probability its
// share of the N ranks), which keeps the table small at thousands of units and is exact for the
// coarsened sum. Built once per N, for sums over up to `max_steps` steps.
class RankSumTail {
 public:
  static constexpr int kMaxLevels = 64;
  RankSumTail() = default;
  RankSumTail(int units, int max_steps);
  int units() const { return units_; }
  int levels() const { return levels_; }
  // The level of rank `rank` (0 = least) among the units.
  int level(int rank) const;
  // P(the sum of n steps' levels >= sum) under exchangeability.
  double p(int sum, int n) const;

 private:
  int units_ = 0, levels_ = 0;
  std::vector<std::vector<double>> upper_;  // upper_[n - 1][s] = P(sum over n steps >= s)
};

struct PoolSummary {
  double q50 = 0, q84 = 0, q90 = 0, mean = 0, sd = 0;
  double tail_scale = 0;  // mean excess of the draws above q90
  size_t n = 0;
};

// One family of units (ranks, stages): its null pool and each unit's recent observed scores.
class UnitFamily {
 public:
  // z_clip: the most one step adds to a window test, in null sd (see window_p1).
  // per_unit_offset: units are not exchangeable (pipeline stages: their place in the schedule
  // shapes their scores), so each is compared with the null shifted by its own null mean.
  UnitFamily(int pool_steps, int history_steps, double z_clip, bool per_unit_offset)
      : pool_steps_(pool_steps), history_steps_(history_steps), z_clip_(z_clip),
        per_unit_offset_(per_unit_offset) {}

  // At most this many units (evenly spread) measure the observed dispersion: bounded cost.
  static constexpr size_t kCalibrationUnits = 64;

  // One null draw (a score per unit), then this step's observed scores (S values, not logs).
  // groups: per unit, its peer group (ranks: their stage); nullptr: all units are peers.
  void add_null(const std::vector<double>& scores, const std::vector<int>* groups = nullptr);
  void add_observed(const std::vector<double>& scores, const std::vector<int>* groups = nullptr);
  // Smallest sd the tests use (log units): the replay's time resolution relative to the step.
  void set_floor(double f) { floor_ = f; }

  size_t units() const { return last_.size(); }
  const PoolSummary& pool() const { return summary_; }
  // This step, unit u (corrected for all units).
  double step_p(size_t u) const;
  // Standard score of unit u this step against the null's upper tail (no correction).
  double step_z(size_t u) const;
  // Unit u over its last k observed steps (fewer when it has fewer); one unit, uncorrected.
  // Each step's score, standardised by the null's mean and sd, is clipped to +-z_clip first:
  // one step far out (a gc pause) is the step test's business and must not make a rank look
  // persistently slow for the next k steps; a persistently slow rank is out on every step.
  double window_p1(size_t u, int k) const;
  // Median over its last k steps of unit u's standard score against the null (> 0: late on
  // most of them; a rank slow on one step in four, a gc pause, is not).
  double window_median_z(size_t u, int k) const;
  // P(median of k null scores >= unit u's median over its last k steps): the median of k
  // standard normals has sd 1.2533 / sqrt(k). Robust where the mean is not: a few steps far out
  // (long-tailed work) lift a mean, not a median. One unit, uncorrected.
  double window_median_p1(size_t u, int k) const;
  // Mean observed score (as S, not log) of unit u over its last k steps.
  double window_mean_S(size_t u, int k) const;
  size_t observed_steps() const { return history_.size(); }
  // The null's widening to the observed dispersion (see null_widening; 0: not known yet).
  double widening() const { return widening_; }
  // The recent steps' relative log scores (newest last), each unit's null offset and the time
  // resolution: what the persistence test ranks the units by (persistence.h).
  const std::deque<std::vector<float>>& history() const { return history_; }
  double offset(size_t u) const { return u < offset_.size() ? offset_[u] : 0.0; }
  double floor() const { return floor_; }
  // Leave unit u's own step-to-step spread out of the observed dispersion (-1: none): the unit
  // the persistence test found leading is the culprit, not the jitter (noise_verdict.cpp).
  // Recalibrates at once.
  void exclude_from_calibration(int u);

 private:
  void summarise();
  void calibrate();
  // An observed log score, offset, brought to the null's scale around its median.
  double calibrated(double x, size_t u) const;
  double upper_tail(double x) const;
  void relative_logs(const std::vector<double>& scores, const std::vector<int>* groups, std::vector<double>* out);
  int pool_steps_, history_steps_;
  double z_clip_;
  bool per_unit_offset_;
  std::vector<double> offset_;              // per unit: its null mean - the pooled one
  double floor_ = 1e-9;
  std::deque<std::vector<float>> draws_;    // log scores of the null draws, per draw
  PoolSummary summary_;
  std::vector<double> last_;                // log scores of this step
  std::deque<std::vector<float>> history_;  // relative log scores of the recent steps, newest last
  std::deque<std::vector<float>> raw_history_;  // the scores themselves
  std::vector<double> scratch_, last_draw_, sorted_, column_, differences_;
  std::vector<int> order_;
  double widening_ = 0;
  int excluded_ = -1;  // exclude_from_calibration
};

// The null of S itself, widened to the step-to-step dispersion of the job's observed S.
class StepNull {
 public:
  StepNull(int pool_steps, int calibration_steps)
      : pool_steps_(pool_steps), calibration_steps_(calibration_steps) {}
  void add_null(double S);
  // An analysed step's observed S that no verdict explained (the noise_verdict adds it after
  // judging the step): what the calibration measures the job's own dispersion from.
  void add_observed(double S);
  void set_floor(double f) { floor_ = f; }
  double p(double S) const;           // P(null S >= S)
  double mean_S() const;              // the null's mean S: what jitter alone costs the step
  size_t draws() const { return draws_.size(); }
  double widening() const;            // see null_widening

 private:
  int pool_steps_, calibration_steps_;
  double floor_ = 1e-9;
  std::deque<double> draws_;     // log S
  std::deque<double> observed_;  // log S of the recent analysed steps
};

}  // namespace sp::online
