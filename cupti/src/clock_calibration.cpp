#include "clock_calibration.h"

#include <cmath>
#include <limits>

namespace sp::cupti {

void ClockCalibration::reset() {
  samples_.clear();
  slope_ = 1.0;
  intercept_ = 0.0;
  slope_fitted_ = false;
  best_half_bracket_ = 0;
}

bool ClockCalibration::add(const ClockSample& s) {
  if (s.host_after < s.host_before || s.host_after - s.host_before > opts_.max_bracket_ns) {
    return false;
  }
  const uint64_t half = (s.host_after - s.host_before) / 2;
  const uint64_t host_mid = s.host_before + half;

  if (!samples_.empty()) {
    // Does the sample agree with the model? Allow the bracket widths plus a drift allowance.
    // Differences are taken in integers first: a double holds an epoch-ns value only to 256 ns.
    const double error =
        std::fabs(static_cast<double>(static_cast<int64_t>(host_mid - to_host(s.device_ts))));
    const double elapsed =
        std::fabs(static_cast<double>(static_cast<int64_t>(host_mid - anchor_host_)));
    const double allowed = static_cast<double>(opts_.tolerance_ns + half + best_half_bracket_) +
                           elapsed * opts_.tolerance_ppm * 1e-6;
    // With one sample the slope is unknown (it may be a TSC base): fit it instead of judging.
    const double dx = static_cast<double>(static_cast<int64_t>(s.device_ts - anchor_device_));
    const bool slope_unknown = !slope_fitted_;
    if (!slope_unknown && error > allowed) {
      ++changes_;
      reset();
    } else if (slope_unknown && dx <= 0) {
      ++changes_;  // the device clock went backwards: a new time base
      reset();
    }
  }

  if (samples_.empty()) {
    anchor_device_ = s.device_ts;
    anchor_host_ = host_mid;
    best_half_bracket_ = half;
  }
  if (half < best_half_bracket_) best_half_bracket_ = half;
  if (samples_.size() >= opts_.max_samples) samples_.erase(samples_.begin() + 1);  // keep anchor
  samples_.push_back(Point{static_cast<double>(static_cast<int64_t>(s.device_ts - anchor_device_)),
                           static_cast<double>(static_cast<int64_t>(host_mid - anchor_host_))});
  refit();
  return true;
}

void ClockCalibration::refit() {
  double max_dx = 0;
  for (const Point& p : samples_) max_dx = std::max(max_dx, std::fabs(p.dx));
  if (samples_.size() < 2 || max_dx < static_cast<double>(opts_.min_slope_baseline_ns)) {
    // Too short a baseline for a slope: offset only, averaged over the samples.
    double sum = 0;
    for (const Point& p : samples_) sum += p.dy - p.dx * slope_;
    intercept_ = sum / static_cast<double>(samples_.size());
    return;
  }
  // Least squares over all retained samples.
  double mx = 0, my = 0;
  for (const Point& p : samples_) {
    mx += p.dx;
    my += p.dy;
  }
  const double n = static_cast<double>(samples_.size());
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (const Point& p : samples_) {
    sxx += (p.dx - mx) * (p.dx - mx);
    sxy += (p.dx - mx) * (p.dy - my);
  }
  if (sxx <= 0) return;
  slope_ = sxy / sxx;
  intercept_ = my - slope_ * mx;
  slope_fitted_ = true;
}

uint64_t ClockCalibration::to_host(uint64_t device_ts) const {
  if (samples_.empty()) return device_ts;
  const double dx = static_cast<double>(static_cast<int64_t>(device_ts - anchor_device_));
  const double dy = intercept_ + slope_ * dx;
  // The integer anchor is added separately to keep ns precision (a double holds epoch ns only to
  // 256 ns); clamp at the ends of the range.
  if (dy < 0 && -dy >= static_cast<double>(anchor_host_)) return 0;
  if (dy > 0 && dy >= static_cast<double>(std::numeric_limits<uint64_t>::max() - anchor_host_)) {
    return std::numeric_limits<uint64_t>::max();
  }
  return anchor_host_ + static_cast<uint64_t>(static_cast<int64_t>(std::llround(dy)));
}

int64_t ClockCalibration::offset_ns() const {
  if (samples_.empty()) return 0;
  return static_cast<int64_t>(anchor_host_ - anchor_device_) + std::llround(intercept_);
}

ClockSample best_of_burst(TimestampFn device, void* device_ctx, TimestampFn host, void* host_ctx,
                          int n) {
  ClockSample best;
  uint64_t best_width = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < n; ++i) {
    ClockSample s;
    s.host_before = host(host_ctx);
    s.device_ts = device(device_ctx);
    s.host_after = host(host_ctx);
    const uint64_t width = s.host_after >= s.host_before ? s.host_after - s.host_before
                                                         : std::numeric_limits<uint64_t>::max();
    if (width < best_width) {
      best_width = width;
      best = s;
    }
  }
  return best;
}

}  // namespace sp::cupti
