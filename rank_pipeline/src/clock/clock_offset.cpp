#include "clock_offset.h"

#include <algorithm>
#include <cmath>

namespace sp::rank_pipeline {
namespace {

// No two clocks are this far apart (~146 years): an answer (another process's number) that makes
// an offset beyond it, or one that overflows, is no sample. Within it, the skew's differences of
// offsets cannot overflow either.
constexpr int64_t kMaxOffsetNs = int64_t{1} << 62;

bool usable(const ClockSample& s) {
  int64_t offset = 0;
  return s.rtt_ns() >= 0 &&
         !__builtin_sub_overflow(s.server_ns, s.t1_ns + s.rtt_ns() / 2, &offset) &&
         offset > -kMaxOffsetNs && offset < kMaxOffsetNs;
}

}  // namespace

ClockEstimate best_sample_estimate(const std::vector<ClockSample>& samples) {
  ClockEstimate e;
  e.samples = static_cast<int>(samples.size());
  const ClockSample* best = nullptr;
  for (const ClockSample& s : samples) {
    if (!usable(s)) continue;  // the local clock stepped backwards mid-sample, or a wild answer
    if (best == nullptr || s.rtt_ns() < best->rtt_ns()) best = &s;
  }
  if (best == nullptr) {
    e.error = samples.empty()
                  ? "no round trip got an answer"
                  : "every round trip saw the local clock go backwards or an answer out of range";
    return e;
  }
  e.ok = true;
  e.offset_ns = best->offset_ns();
  e.rtt_ns = best->rtt_ns();
  e.uncertainty_ns = (e.rtt_ns + 1) / 2;
  e.at_ns = best->t1_ns + e.rtt_ns / 2;
  return e;
}

ClockEstimate estimate_clock_offset(const ClockEstimatorOptions& options, const LocalClock& clock,
                                    const TimeRequest& request) {
  using Steady = std::chrono::steady_clock;
  std::vector<ClockSample> samples;
  samples.reserve(static_cast<size_t>(std::max(options.round_trips, 0)));
  std::string error;
  Steady::time_point budget_end{};
  for (int i = 0; i < options.round_trips; ++i) {
    const auto now = Steady::now();
    if (i == 1) budget_end = now + options.budget;
    if (i > 0 && now >= budget_end) break;
    const auto deadline = i == 0 ? now + options.first_timeout : budget_end;
    ClockSample s;
    s.t1_ns = clock();
    const std::optional<int64_t> server = request(i, deadline, &error);
    s.t4_ns = clock();
    if (!server) break;
    s.server_ns = *server;
    samples.push_back(s);
  }
  ClockEstimate e = best_sample_estimate(samples);
  if (!e.ok && !error.empty()) e.error = error;
  return e;
}

void SkewTracker::add(const ClockEstimate& estimate) {
  if (!estimate.ok) return;
  points_.push_back({estimate.at_ns, estimate.offset_ns});
  while (points_.size() > keep_) points_.pop_front();
}

std::optional<double> SkewTracker::ppm() const {
  if (points_.size() < 2 || points_.back().at_ns - points_.front().at_ns < min_span_ns_) {
    return std::nullopt;
  }
  // Relative to the first point, so the sums stay small enough for doubles.
  const Point& origin = points_.front();
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : points_) {
    const double x = static_cast<double>(p.at_ns - origin.at_ns);
    const double y = static_cast<double>(p.offset_ns - origin.offset_ns);
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double denom = n * sxx - sx * sx;
  if (denom <= 0) return std::nullopt;
  return (n * sxy - sx * sy) / denom * 1e6;
}

std::optional<int64_t> SkewTracker::projected_offset(int64_t now_ns) const {
  const std::optional<double> skew = ppm();
  if (!skew) return std::nullopt;
  const Point& last = points_.back();
  const double drift = *skew * 1e-6 * static_cast<double>(now_ns - last.at_ns);
  if (!(std::fabs(drift) < static_cast<double>(kMaxOffsetNs))) return std::nullopt;  // no clock's
  return last.offset_ns + static_cast<int64_t>(drift);
}

}  // namespace sp::rank_pipeline
