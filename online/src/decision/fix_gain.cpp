#include "fix_gain.h"

#include <algorithm>
#include <cmath>

namespace sp::online {

// Q(a, x) by its series below a + 1 and its continued fraction above (Lentz), as in the
// standard references; both converge in a few dozen terms for the shapes used here.
double gamma_upper(double a, double x) {
  if (!(x > 0)) return 1.0;
  if (!(a > 0)) return 0.0;
  const double log_front = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 500 && term > sum * 1e-15; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return std::clamp(1.0 - sum * std::exp(log_front), 0.0, 1.0);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 500; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return std::clamp(std::exp(log_front) * h, 0.0, 1.0);
}

void FixGains::add_null(double best_gain) {
  null_.push_back(best_gain);
  while (static_cast<int>(null_.size()) > std::max(1, pool_steps_)) null_.pop_front();
}

void FixGains::add_observed(const std::vector<double>& gains) {
  if (static_cast<int>(history_.size()) >= std::max(1, history_steps_)) {
    std::vector<float> reused = std::move(history_.front());  // keeps its capacity
    history_.pop_front();
    reused.assign(gains.begin(), gains.end());
    history_.push_back(std::move(reused));
  } else {
    history_.emplace_back(gains.begin(), gains.end());
  }
}

double FixGains::null_mean() const {
  if (null_.empty()) return 0.0;
  double sum = 0;
  for (double g : null_) sum += g;
  return sum / static_cast<double>(null_.size());
}

double FixGains::recent_mean(size_t u, int k) const {
  const size_t n = std::min(history_.size(), static_cast<size_t>(std::max(1, k)));
  if (n == 0) return 0.0;
  double sum = 0;
  for (size_t i = history_.size() - n; i < history_.size(); ++i) {
    if (u < history_[i].size()) sum += static_cast<double>(history_[i][u]);
  }
  return sum / static_cast<double>(n);
}

FixGains::Law FixGains::law() const {
  Law out;
  if (null_.empty()) return out;
  const double mean = null_mean();
  double var = 0;
  for (double g : null_) var += (g - mean) * (g - mean);
  var = null_.size() > 1 ? var / static_cast<double>(null_.size() - 1) : 0.0;
  // A pool with no spread (a job without jitter, or a single draw) gives no shape: exponential.
  out.shape = var > 0 && mean > 0 ? mean * mean / var : 1.0;
  out.scale = std::max(mean / out.shape, floor_);
  return out;
}

double FixGains::step_p(size_t u) const {
  if (history_.empty() || u >= history_.back().size()) return 1.0;
  const double g = static_cast<double>(history_.back()[u]);
  const Law l = law();
  return g > floor_ ? gamma_upper(l.shape, g / l.scale) : 1.0;
}

double FixGains::window_p(size_t u, int k) const {
  const int n = static_cast<int>(std::min(history_.size(), static_cast<size_t>(std::max(1, k))));
  if (n == 0) return 1.0;
  const double mean = recent_mean(u, k);
  const Law l = law();
  return mean > floor_ ? gamma_upper(n * l.shape, n * mean / l.scale) : 1.0;
}

}  // namespace sp::online
