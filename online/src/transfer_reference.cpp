#include "transfer_reference.h"

#include <cmath>

#include "robust_stats.h"
#include "significance.h"

namespace sp::online {

// The robust sd (1.4826 x MAD) of the levels' logs.
double TransferReference::log_sd(const std::vector<double>& levels) {
  std::vector<double> logs;
  for (double x : levels) {
    if (x > 0) logs.push_back(std::log(x));
  }
  return mad_sigma(&logs);
}

double TransferReference::ideal(const std::string& key, Window* w, double keys) const {
  w->p = 1;
  if (alpha_ <= 0 || !w->now || w->levels.empty() || !(w->median > 0)) return w->median;
  const auto b = best_.find(key);
  if (b == best_.end() || !(b->second.log_level < std::log(w->median))) return w->median;
  const double now = w->levels.back();
  if (!(now > 0)) return w->median;
  const double excess = std::log(now) - b->second.log_level;
  const double sd = std::hypot(log_sd(w->levels), b->second.se);
  // No dispersion at all (a job without jitter): any excess is beyond it.
  const double p = sd > 0 ? normal_upper(excess / sd) : (excess > 0 ? 0.0 : 1.0);
  w->p = sidak(p, keys);
  w->sustained = std::exp(b->second.log_level);
  return w->p < alpha_ ? w->sustained : w->median;
}

// The median of k levels has a standard error of ~1.2533 x sd / sqrt(k) (normal levels).
void TransferReference::remember(const std::string& key, const Window& w) {
  if (alpha_ <= 0 || !(w.median > 0) || w.levels.empty()) return;
  const double log_level = std::log(w.median);
  auto it = best_.find(key);
  if (it != best_.end() && !(log_level < it->second.log_level)) return;  // the error only for a new reference
  const Level now{log_level, 1.2533 * log_sd(w.levels) / std::sqrt(static_cast<double>(w.levels.size()))};
  if (it == best_.end()) {
    best_.emplace(key, now);
  } else {
    it->second = now;
  }
}

}  // namespace sp::online
