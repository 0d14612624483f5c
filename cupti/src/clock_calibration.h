// Relating CUPTI timestamps to the probe clock (CLOCK_REALTIME ns).
//
// CUPTI's default time base is CLOCK_REALTIME already, but nothing guarantees it: torch.profiler
// (Kineto) installs a TSC timestamp callback by default, after which CUPTI records carry raw TSC
// ticks. So we never assume; we fit host = a + b * cupti over bracketed sample pairs
// (host read, cuptiGetTimestamp, host read; the tightest bracket of a burst wins), re-fit as the
// baseline grows, and reset the model when a new sample disagrees with it (a time-base switch).
// The fitted slope gives the skew between the two clocks, reported in ppm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sp::cupti {

struct ClockSample {
  uint64_t device_ts = 0;    // cuptiGetTimestamp
  uint64_t host_before = 0;  // probe clock just before
  uint64_t host_after = 0;   // probe clock just after
};

struct ClockCalibrationOptions {
  size_t max_samples = 32;
  uint64_t max_bracket_ns = 200000;      // samples bracketed wider than this are discarded
  uint64_t min_slope_baseline_ns = 5000000;  // fit a slope only over >= 5 ms of device time
  uint64_t tolerance_ns = 1000000;       // model error allowed on top of the drift allowance
  double tolerance_ppm = 500.0;
};

class ClockCalibration {
 public:
  explicit ClockCalibration(ClockCalibrationOptions opts = {}) : opts_(opts) {}

  // Adds a sample. Returns false if it was discarded (bracket too wide). When the sample
  // contradicts the current model the model restarts from it and time_base_changes() grows.
  bool add(const ClockSample& s);

  // Probe-clock time of a CUPTI timestamp. Before any sample: the timestamp unchanged.
  uint64_t to_host(uint64_t device_ts) const;

  bool calibrated() const { return !samples_.empty(); }
  // (slope - 1) * 1e6: how fast the CUPTI clock runs against the host clock. 0 until a slope
  // could be fitted.
  double skew_ppm() const { return slope_fitted_ ? (slope_ - 1.0) * 1e6 : 0.0; }
  double slope() const { return slope_; }
  bool slope_fitted() const { return slope_fitted_; }
  // host - device at the anchor sample (ns); meaningful when the time base is ns.
  int64_t offset_ns() const;
  // Half-width of the tightest bracket seen: the precision of any single mapping.
  uint64_t uncertainty_ns() const { return best_half_bracket_; }
  uint32_t time_base_changes() const { return changes_; }
  size_t sample_count() const { return samples_.size(); }

  void reset();

 private:
  struct Point {
    double dx;  // device - anchor device
    double dy;  // host midpoint - anchor host
  };
  void refit();

  ClockCalibrationOptions opts_;
  std::vector<Point> samples_;
  uint64_t anchor_device_ = 0;
  uint64_t anchor_host_ = 0;
  double slope_ = 1.0;
  double intercept_ = 0.0;  // in dy units at dx = 0
  bool slope_fitted_ = false;
  uint64_t best_half_bracket_ = 0;
  uint32_t changes_ = 0;
};

// Takes `n` bracketed samples with the given clocks and returns the tightest one.
using TimestampFn = uint64_t (*)(void* ctx);
ClockSample best_of_burst(TimestampFn device, void* device_ctx, TimestampFn host, void* host_ctx,
                          int n);

}  // namespace sp::cupti
