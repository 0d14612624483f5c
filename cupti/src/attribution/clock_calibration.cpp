#include "clock_calibration.h"

#include <cmath>
#include <limits>

namespace sp::cupti {

void ClockCalibration::reset() {
  samples_.clear();
  slope_ = 1.0;
  intercept_ = 0.0;
  slope_fitted_ = false;
  first_slope_ = 0.0;
  best_half_bracket_ = 0;
  previous_ = Model();
}

void ClockCalibration::restart() {
  ++changes_;
  Model keep = current_model();
  const bool fitted = slope_fitted_;
  reset();
  // Only a model with a slope maps the old base's late records right.
  if (fitted) previous_ = keep;
}

ClockCalibration::Model ClockCalibration::current_model() const {
  Model m;
  m.valid = !samples_.empty();
  m.anchor_device = anchor_device_;
  m.anchor_cpu = anchor_cpu_;
  m.slope = slope_;
  m.intercept = intercept_;
  return m;
}

ClockCalibration::TimeBase ClockCalibration::time_base() const {
  if (!slope_fitted_) return TimeBase::kUnknown;
  return std::fabs(slope_ - 1.0) < 0.01 ? TimeBase::kNanoseconds : TimeBase::kTicks;
}

double ClockCalibration::skew_ppm() const {
  switch (time_base()) {
    case TimeBase::kNanoseconds:
      return (slope_ - 1.0) * 1e6;
    case TimeBase::kTicks:
      return first_slope_ > 0 ? (slope_ / first_slope_ - 1.0) * 1e6 : 0.0;
    case TimeBase::kUnknown:
      break;
  }
  return 0.0;
}

bool ClockCalibration::add(const ClockSample& s) {
  if (s.cpu_after < s.cpu_before || s.cpu_after - s.cpu_before > opts_.max_bracket_ns) {
    return false;
  }
  const uint64_t half = (s.cpu_after - s.cpu_before) / 2;
  const uint64_t cpu_mid = s.cpu_before + half;

  if (!samples_.empty()) {
    // Does the sample agree with the model? Allow the bracket widths plus a drift allowance.
    // Differences are taken in integers first: a double holds an epoch-ns value only to 256 ns.
    const double error =
        std::fabs(static_cast<double>(static_cast<int64_t>(cpu_mid - to_cpu(s.device_ts))));
    const double elapsed =
        std::fabs(static_cast<double>(static_cast<int64_t>(cpu_mid - anchor_cpu_)));
    const double allowed = static_cast<double>(opts_.tolerance_ns + half + best_half_bracket_) +
                           elapsed * opts_.tolerance_ppm * 1e-6;
    // With one sample the slope is unknown (it may be a TSC base): fit it instead of judging.
    const double dx = static_cast<double>(static_cast<int64_t>(s.device_ts - anchor_device_));
    const bool slope_unknown = !slope_fitted_;
    if (!slope_unknown && error > allowed) {
      restart();
    } else if (slope_unknown && dx <= 0) {
      restart();  // the device clock went backwards: a new time base
    }
  }

  if (samples_.empty()) {
    anchor_device_ = s.device_ts;
    anchor_cpu_ = cpu_mid;
    best_half_bracket_ = half;
  }
  if (half < best_half_bracket_) best_half_bracket_ = half;
  if (samples_.size() >= opts_.max_samples) samples_.erase(samples_.begin() + 1);  // keep anchor
  samples_.push_back(Point{static_cast<double>(static_cast<int64_t>(s.device_ts - anchor_device_)),
                           static_cast<double>(static_cast<int64_t>(cpu_mid - anchor_cpu_))});
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
  if (first_slope_ == 0.0) first_slope_ = slope_;
}

uint64_t ClockCalibration::map(const Model& m, uint64_t device_ts) {
  const double dx = static_cast<double>(static_cast<int64_t>(device_ts - m.anchor_device));
  const double dy = m.intercept + m.slope * dx;
  // The integer anchor is added separately to keep ns precision (a double holds epoch ns only to
  // 256 ns); clamp at the ends of the range.
  if (dy < 0 && -dy >= static_cast<double>(m.anchor_cpu)) return 0;
  if (dy > 0 && dy >= static_cast<double>(std::numeric_limits<uint64_t>::max() - m.anchor_cpu)) {
    return std::numeric_limits<uint64_t>::max();
  }
  return m.anchor_cpu + static_cast<uint64_t>(static_cast<int64_t>(std::llround(dy)));
}

uint64_t ClockCalibration::to_cpu(uint64_t device_ts) const {
  if (samples_.empty()) {
    return previous_.valid ? map(previous_, device_ts) : device_ts;
  }
  if (previous_.valid) {
    const auto distance = [device_ts](uint64_t anchor) {
      return device_ts > anchor ? device_ts - anchor : anchor - device_ts;
    };
    if (distance(previous_.anchor_device) < distance(anchor_device_)) {
      return map(previous_, device_ts);  // written before the switch
    }
  }
  return map(current_model(), device_ts);
}

int64_t ClockCalibration::offset_ns() const {
  if (samples_.empty()) return 0;
  if (time_base() != TimeBase::kTicks) {
    // Both in ns: the difference at the anchor (scaling epoch ns by a slope of 1 +- 1e-6 would
    // turn the skew into seconds of offset).
    return static_cast<int64_t>(anchor_cpu_ - anchor_device_) + std::llround(intercept_);
  }
  const double device_ns = static_cast<double>(anchor_device_) * slope_;
  return static_cast<int64_t>(anchor_cpu_) + std::llround(intercept_) -
         static_cast<int64_t>(std::llround(device_ns));
}

ClockSample best_of_burst(TimestampFn device, void* device_ctx, TimestampFn cpu, void* cpu_ctx,
                          int n) {
  ClockSample best;
  uint64_t best_width = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < n; ++i) {
    ClockSample s;
    s.cpu_before = cpu(cpu_ctx);
    s.device_ts = device(device_ctx);
    s.cpu_after = cpu(cpu_ctx);
    const uint64_t width = s.cpu_after >= s.cpu_before ? s.cpu_after - s.cpu_before
                                                         : std::numeric_limits<uint64_t>::max();
    if (width < best_width) {
      best_width = width;
      best = s;
    }
  }
  return best;
}

}  // namespace sp::cupti
