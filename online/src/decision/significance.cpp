#include "significance.h"

#include <algorithm>
#include <cmath>

#include "ideal/robust_stats.h"

namespace sp::online {
namespace {

double log_score(double S) { return std::log(std::max(S, 1e-300)); }

}  // namespace

// Each unit's log score minus the median over its peers in the same step (draw): lateness
// relative to the units doing the same work. A slowdown every unit shares (a slower link for
// everyone) moves the median with it and is not any unit's doing (the S test sees it); for
// ranks the peers are the ranks of the same stage, so that a heavier stage is not a worker
// issue of its ranks (the stage family sees it).
void UnitFamily::relative_logs(const std::vector<double>& scores, const std::vector<int>* groups,
                               std::vector<double>* out) {
  out->resize(scores.size());
  for (size_t u = 0; u < scores.size(); ++u) (*out)[u] = log_score(scores[u]);
  if (scores.empty()) return;
  if (!groups || groups->size() != scores.size()) {
    scratch_.assign(out->begin(), out->end());
    const double med = median_inplace(&scratch_);
    for (double& x : *out) x -= med;
    return;
  }
  order_.resize(scores.size());
  for (size_t u = 0; u < scores.size(); ++u) order_[u] = static_cast<int>(u);
  std::stable_sort(order_.begin(), order_.end(), [groups](int a, int b) {
    return (*groups)[static_cast<size_t>(a)] < (*groups)[static_cast<size_t>(b)];
  });
  for (size_t i = 0; i < order_.size();) {
    size_t j = i;
    scratch_.clear();
    const int g = (*groups)[static_cast<size_t>(order_[i])];
    for (; j < order_.size() && (*groups)[static_cast<size_t>(order_[j])] == g; ++j) {
      scratch_.push_back((*out)[static_cast<size_t>(order_[j])]);
    }
    const double med = median_inplace(&scratch_);
    for (; i < j; ++i) (*out)[static_cast<size_t>(order_[i])] -= med;
  }
}

double null_widening(double observed_sd, double dof, double null_sd) {
  if (!(dof >= 1)) return 0;
  const double upper = sd_upper_band(observed_sd, dof);
  return null_sd > 0 ? std::max(1.0, upper / null_sd) : 1.0;
}


double binomial_upper(int k, int n, double q) {
  if (k <= 0) return 1;
  if (k > n || q <= 0) return 0;
  double total = 0;
  for (int i = k; i <= n; ++i) {
    const double log_term = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                            i * std::log(q) + (n - i) * std::log1p(-q);
    total += std::exp(log_term);
  }
  return std::min(1.0, total);
}

RankSumTail::RankSumTail(int units, int max_steps)
    : units_(std::max(1, units)), levels_(std::min(std::max(1, units), kMaxLevels)) {
  std::vector<double> pmf(static_cast<size_t>(levels_), 0.0);
  for (int r = 0; r < units_; ++r) pmf[static_cast<size_t>(level(r))] += 1.0 / units_;
  std::vector<double> dist{1.0};  // the sum over 0 steps
  for (int n = 1; n <= std::max(1, max_steps); ++n) {
    std::vector<double> next(dist.size() + pmf.size() - 1, 0.0);
    for (size_t s = 0; s < dist.size(); ++s) {
      for (size_t l = 0; l < pmf.size(); ++l) next[s + l] += dist[s] * pmf[l];
    }
    dist = std::move(next);
    std::vector<double> upper(dist.size() + 1, 0.0);
    for (size_t s = dist.size(); s-- > 0;) upper[s] = upper[s + 1] + dist[s];
    upper_.push_back(std::move(upper));
  }
}

int RankSumTail::level(int rank) const {
  return static_cast<int>(static_cast<int64_t>(rank) * levels_ / std::max(1, units_));
}

double RankSumTail::p(int sum, int n) const {
  if (n <= 0 || static_cast<size_t>(n) > upper_.size()) return 1.0;
  if (sum <= 0) return 1.0;
  const std::vector<double>& u = upper_[static_cast<size_t>(n - 1)];
  return static_cast<size_t>(sum) < u.size() ? std::min(1.0, u[static_cast<size_t>(sum)]) : 0.0;
}

void UnitFamily::add_null(const std::vector<double>& scores, const std::vector<int>* groups) {
  if (!draws_.empty() && draws_.back().size() != scores.size()) {
    draws_.clear();  // the job changed shape: its old null and history do not apply
    history_.clear();
    raw_history_.clear();
  }
  relative_logs(scores, groups, &last_draw_);
  draws_.emplace_back(last_draw_.begin(), last_draw_.end());
  while (static_cast<int>(draws_.size()) > std::max(1, pool_steps_)) draws_.pop_front();
  summarise();
}

void UnitFamily::add_observed(const std::vector<double>& scores, const std::vector<int>* groups) {
  if (!history_.empty() && history_.back().size() != scores.size()) {
    history_.clear();
    raw_history_.clear();
  }
  relative_logs(scores, groups, &last_);
  history_.emplace_back(last_.begin(), last_.end());
  raw_history_.emplace_back(scores.begin(), scores.end());
  while (raw_history_.size() > history_.size()) raw_history_.pop_front();
  while (static_cast<int>(history_.size()) > std::max(1, history_steps_)) history_.pop_front();
  calibrate();
}

// The observed scores' step-to-step spread, pooled over (at most kCalibrationUnits) units,
// against the null pool's (q84 - q50, the same robust scale). Two robust scales of the same
// sigma, each blind to one thing a straggler does, and the smaller one is taken:
// - deviations from each unit's own median over the history: one-off steps far out (a gc
//   pause one step in four) move a median by one order statistic; but a rank that becomes slow
//   shifts its level, a second mode that widens the null until most of its history is slow
//   (with 2 dp ranks per stage it was half of the pooled deviations, and the straggler went
//   unnamed for its first ~12 steps);
// - successive differences (sd sqrt(2) sigma for iid scores): a level shift is one difference;
//   but a one-off step is two.
// The band's degrees of freedom are those of the differences, the smaller: only disjoint pairs
// are independent, one per two steps.
void UnitFamily::calibrate() {
  widening_ = 0;
  if (history_.empty()) return;
  const size_t units = history_.back().size();
  const size_t stride = std::max<size_t>(1, units / kCalibrationUnits);
  scratch_.clear();
  differences_.clear();
  double dof = 0;
  for (size_t u = 0; u < units; u += stride) {
    if (static_cast<int>(u) == excluded_ && units > 1) continue;
    column_.clear();
    for (const auto& step : history_) column_.push_back(static_cast<double>(step[u]));
    for (size_t i = 1; i < column_.size(); ++i) differences_.push_back(std::fabs(column_[i] - column_[i - 1]));
    const double med = median_inplace(&column_);
    for (const auto& step : history_) scratch_.push_back(std::fabs(static_cast<double>(step[u]) - med));
    dof += static_cast<double>(history_.size() / 2);
  }
  if (differences_.empty()) return;
  const double around_median = 1.4826 * median_inplace(&scratch_);
  const double successive = 1.4826 * median_inplace(&differences_) / std::sqrt(2.0);
  widening_ = null_widening(std::min(around_median, successive), dof, std::max(summary_.q84 - summary_.q50, floor_));
}

void UnitFamily::exclude_from_calibration(int u) {
  if (u == excluded_) return;
  excluded_ = u;
  calibrate();
}

double UnitFamily::calibrated(double x, size_t u) const {
  return summary_.q50 + (x - offset_[u] - summary_.q50) / widening_;
}

void UnitFamily::summarise() {
  const size_t units = draws_.empty() ? 0 : draws_.back().size();
  offset_.assign(units, 0.0);
  if (per_unit_offset_ && !draws_.empty()) {
    // Each unit's own null mean, as an offset from the pooled one: where units sit in the
    // graph (a pipeline's stages) shapes their scores even when nobody is slow.
    double total = 0;
    for (const auto& draw : draws_) {
      for (size_t u = 0; u < units; ++u) offset_[u] += static_cast<double>(draw[u]);
    }
    for (double& o : offset_) {
      o /= static_cast<double>(draws_.size());
      total += o;
    }
    for (double& o : offset_) o -= total / static_cast<double>(units);
  }
  scratch_.clear();
  for (const auto& draw : draws_) {
    for (size_t u = 0; u < units; ++u) scratch_.push_back(static_cast<double>(draw[u]) - offset_[u]);
  }
  PoolSummary s;
  s.n = scratch_.size();
  if (s.n > 0) {
    double sum = 0, sq = 0;
    for (double x : scratch_) sum += x;
    s.mean = sum / static_cast<double>(s.n);
    for (double x : scratch_) sq += (x - s.mean) * (x - s.mean);
    s.sd = s.n > 1 ? std::sqrt(sq / static_cast<double>(s.n - 1)) : 0.0;
    std::sort(scratch_.begin(), scratch_.end());
    auto quantile = [this](double q) {
      return scratch_[std::min(scratch_.size() - 1, static_cast<size_t>(q * static_cast<double>(scratch_.size())))];
    };
    s.q50 = quantile(0.5);
    s.q84 = quantile(0.8413);  // one sd above the median of a normal
    s.q90 = quantile(0.9);
    double excess = 0, over = 0;
    for (double x : scratch_) {
      if (x > s.q90) {
        excess += x - s.q90;
        over += 1;
      }
    }
    s.tail_scale = over > 0 ? excess / over : 0.0;
  }
  summary_ = s;
  sorted_.swap(scratch_);
}

double UnitFamily::step_z(size_t u) const {
  if (u >= last_.size() || u >= offset_.size() || summary_.n == 0 || widening_ <= 0) return 0;
  return (calibrated(last_[u], u) - summary_.q50) / std::max(summary_.q84 - summary_.q50, floor_);
}

// Where the pool has draws, their share at or above x; beyond its top decile, the tail of the
// exceedances over it (peaks over threshold, extreme-value theory's generalised Pareto law with
// shape 0: an exponential with their mean excess). For a light (normal) tail this is on the
// safe side; a null with ties (units capped at their stage's score) is no trouble.
double UnitFamily::upper_tail(double x) const {
  const PoolSummary& s = summary_;
  if (x > s.q90) return 0.1 * std::exp(-(x - s.q90) / std::max(s.tail_scale, floor_));
  const auto at_or_above = static_cast<double>(sorted_.end() - std::lower_bound(sorted_.begin(), sorted_.end(), x));
  return (at_or_above + 1.0) / (static_cast<double>(sorted_.size()) + 1.0);
}

double UnitFamily::step_p(size_t u) const {
  if (u >= last_.size() || u >= offset_.size() || summary_.n == 0 || widening_ <= 0) return 1;
  return sidak(upper_tail(calibrated(last_[u], u)), static_cast<double>(last_.size()));
}

double UnitFamily::window_p1(size_t u, int k) const {
  if (summary_.n == 0 || history_.empty() || u >= history_.back().size() || u >= offset_.size() ||
      widening_ <= 0) {
    return 1;
  }
  const size_t steps = std::min(history_.size(), static_cast<size_t>(std::max(1, k)));
  const double sd = std::max(summary_.sd, floor_) * widening_;
  double sum = 0;
  for (size_t i = history_.size() - steps; i < history_.size(); ++i) {
    const double z = (static_cast<double>(history_[i][u]) - offset_[u] - summary_.mean) / sd;
    sum += std::clamp(z, -z_clip_, z_clip_);
  }
  // The mean of `steps` scores against a null mean estimated from the draws: with a per-unit
  // offset from this unit's own draws, that estimate's error counts too.
  double var = 1.0 / static_cast<double>(steps);
  if (per_unit_offset_) var += 1.0 / static_cast<double>(std::max<size_t>(1, draws_.size()));
  return normal_upper(sum / static_cast<double>(steps) / std::sqrt(var));
}

double UnitFamily::window_median_z(size_t u, int k) const {
  if (summary_.n == 0 || history_.empty() || u >= history_.back().size() || u >= offset_.size() ||
      widening_ <= 0) {
    return 0;
  }
  const size_t steps = std::min(history_.size(), static_cast<size_t>(std::max(1, k)));
  std::vector<double> z;
  z.reserve(steps);
  for (size_t i = history_.size() - steps; i < history_.size(); ++i) {
    z.push_back(static_cast<double>(history_[i][u]) - offset_[u] - summary_.mean);
  }
  return median_inplace(&z) / (std::max(summary_.sd, floor_) * widening_);
}

double UnitFamily::window_median_p1(size_t u, int k) const {
  const size_t steps = std::min(history_.size(), static_cast<size_t>(std::max(1, k)));
  if (steps == 0) return 1;
  return normal_upper(window_median_z(u, k) * std::sqrt(static_cast<double>(steps)) / 1.2533);
}

double UnitFamily::window_mean_S(size_t u, int k) const {
  if (raw_history_.empty() || u >= raw_history_.back().size()) return 1;
  const size_t steps = std::min(raw_history_.size(), static_cast<size_t>(std::max(1, k)));
  double sum = 0;
  for (size_t i = raw_history_.size() - steps; i < raw_history_.size(); ++i) sum += static_cast<double>(raw_history_[i][u]);
  return sum / static_cast<double>(steps);
}

void StepNull::add_null(double S) {
  draws_.push_back(std::log(std::max(S, 1e-300)));
  while (static_cast<int>(draws_.size()) > std::max(1, pool_steps_)) draws_.pop_front();
}

void StepNull::add_observed(double S) {
  observed_.push_back(std::log(std::max(S, 1e-300)));
  while (static_cast<int>(observed_.size()) > std::max(2, calibration_steps_)) observed_.pop_front();
}

double StepNull::widening() const {
  if (observed_.size() < 2 || draws_.size() < 2) return 0;
  // As UnitFamily::calibrate: the smaller of the spread around the median and that of
  // successive differences, so that S changing level once (a fault from some step on, its
  // steps unexplained while the evidence builds) does not widen the null it is tested against.
  std::vector<double> v(observed_.begin(), observed_.end());
  const double observed_sd = level_robust_sd(&v);
  std::vector<double> d(draws_.begin(), draws_.end());
  const double null_sd = std::max(mad_sigma(&d), floor_);
  return null_widening(observed_sd, static_cast<double>(observed_.size()) - 1.0, null_sd);
}

// Gumbel by moments: scale beta = sd * sqrt(6) / pi, location = mean - 0.5772 beta; the sd
// widened to the observed dispersion.
double StepNull::p(double S) const {
  const double widen = widening();
  if (draws_.empty() || widen <= 0) return 1;
  double sum = 0, sq = 0;
  for (double x : draws_) sum += x;
  const double n = static_cast<double>(draws_.size());
  const double mean = sum / n;
  for (double x : draws_) sq += (x - mean) * (x - mean);
  const double sd = draws_.size() > 1 ? std::sqrt(sq / (n - 1)) : 0.0;
  const double beta = std::max(sd, floor_) * widen * std::sqrt(6.0) / 3.141592653589793;
  const double loc = mean - 0.5772156649015329 * beta;
  const double x = std::log(std::max(S, 1e-300));
  return -std::expm1(-std::exp(-(x - loc) / beta));
}

double StepNull::mean_S() const {
  if (draws_.empty()) return 1;
  double sum = 0;
  for (double x : draws_) sum += std::exp(x);
  return sum / static_cast<double>(draws_.size());
}

}  // namespace sp::online
