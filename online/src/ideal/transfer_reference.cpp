#include "transfer_reference.h"

#include <algorithm>
#include <cmath>

#include "robust_stats.h"
#include "tail_probability.h"

namespace sp::online {

// The levels' step-to-step dispersion (level_robust_sd of their logs: a link turning slow
// mid-window is one change of level, not dispersion), at the upper end of its 95% band
// (robust_stats.h): from the few levels of a young window the MAD is itself uncertain (of two
// levels it can be any fraction of the spread), and a reference trusted beyond its evidence
// calls an oversubscribed CPU's scatter a slow link. Fewer than two levels: unknown (-1).
double TransferReference::log_sd(const std::vector<double>& levels) {
  std::vector<double> logs;
  for (double x : levels) {
    if (x > 0) logs.push_back(std::log(x));
  }
  if (logs.size() < 2) return -1;
  const double dof = static_cast<double>(logs.size());
  return sd_upper_band(level_robust_sd(&logs), dof);
}

// Two tests, both at alpha (an intersection-union test: the larger p): the window's median
// above the sustained level (the link has stayed slow: a median moves only when half the window
// has), and this step's own level above it (the step itself paid for it). Why the median too:
// transfers on a shared CPU or network are heavy-tailed, and one step's level judged on a normal
// tail calls any burst a slow link (the clean 4-rank gloo jobs: 3 of 22 steps named comm, at p
// 1e-5 to 1e-13, issue 26). A one-step burst above the window median is no change of level: the
// window median, the ideal that stays, already replays it at the typical level, and the rules
// name comm for it when it costs the step more than the noise does.
double TransferReference::ideal(const std::string& key, Window* w, double keys) const {
  w->p = 1;
  if (alpha_ <= 0 || !w->now || w->levels.empty() || !(w->median > 0)) return w->median;
  const auto b = best_.find(key);
  if (b == best_.end() || !(b->second.log_level < std::log(w->median))) return w->median;
  const double now = w->levels.back();
  if (!(now > 0)) return w->median;
  const double window_sd = log_sd(w->levels);
  if (window_sd < 0) return w->median;
  // The scale is one step's dispersion, not the median's standard error: the reference is the
  // lowest of many window medians (biased low by a few of their errors), and a machine whose
  // load drifts moves its medians by more than their errors without any link being slow.
  const double sd = std::hypot(window_sd, b->second.se);
  auto upper = [&](double level) {
    const double excess = std::log(level) - b->second.log_level;
    // No dispersion at all (a job without jitter): any excess is beyond it.
    return sd > 0 ? normal_upper(excess / sd) : (excess > 0 ? 0.0 : 1.0);
  };
  w->p = sidak(std::max(upper(w->median), upper(now)), keys);
  w->sustained = std::exp(b->second.log_level);
  return w->p < alpha_ ? w->sustained : w->median;
}

// The median of k levels has a standard error of ~1.2533 x sd / sqrt(k) (normal levels). A
// window whose dispersion is unknown (one level: the job's first step) is no reference.
void TransferReference::remember(const std::string& key, const Window& w) {
  if (alpha_ <= 0 || !(w.median > 0) || w.levels.empty()) return;
  const double log_level = std::log(w.median);
  auto it = best_.find(key);
  if (it != best_.end() && !(log_level < it->second.log_level)) return;  // the error only for a new reference
  const double sd = log_sd(w.levels);
  if (sd < 0) return;
  const Level now{log_level, 1.2533 * sd / std::sqrt(static_cast<double>(w.levels.size()))};
  if (it == best_.end()) {
    best_.emplace(key, now);
  } else {
    it->second = now;
  }
}

}  // namespace sp::online
