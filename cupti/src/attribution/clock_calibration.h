// Relating CUPTI timestamps to the probe clock (CLOCK_REALTIME ns).
//
// CUPTI's default time base is CLOCK_REALTIME already, but nothing guarantees it: torch.profiler
// (Kineto) installs a TSC timestamp callback by default, after which CUPTI records carry raw TSC
// ticks. So we never assume; we fit cpu = a + b * cupti over bracketed sample pairs
// (CPU read, cuptiGetTimestamp, CPU read; the tightest bracket of a burst wins), re-fit as the
// baseline grows, and reset the model when a new sample disagrees with it (a time-base switch).
// The fitted slope gives the skew between the two clocks, reported in ppm.
//
// Time base: a slope within 1% of 1 is CUPTI's own nanoseconds; anything else is a tick counter
// (the TSC: 0.476 ns per tick at 2.1 GHz). Everything the probe reports is converted through the
// fit, so durations are nanoseconds in either base. The model of the base before the last switch
// is kept: records written before the switch can still arrive in the window after it, and each
// timestamp is mapped by the model whose anchor it is nearest (the bases differ by orders of
// magnitude: epoch nanoseconds against ticks since boot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sp::cupti {

struct ClockSample {
  uint64_t device_ts = 0;    // cuptiGetTimestamp
  uint64_t cpu_before = 0;  // probe clock just before
  uint64_t cpu_after = 0;   // probe clock just after
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
  uint64_t to_cpu(uint64_t device_ts) const;

  enum class TimeBase { kUnknown, kNanoseconds, kTicks };
  TimeBase time_base() const;
  // Nanoseconds per CUPTI unit (1 in the ns base; 1 / GHz of the TSC); 1 until fitted.
  double ns_per_unit() const { return slope_; }

  bool calibrated() const { return !samples_.empty(); }
  // How fast the CUPTI clock runs against the CPU clock, in ppm: in the ns base (slope - 1) * 1e6;
  // in a tick base, against the first slope fitted in that base (a tick has no nominal length
  // here). 0 until a slope could be fitted.
  double skew_ppm() const;
  double slope() const { return slope_; }
  bool slope_fitted() const { return slope_fitted_; }
  // CPU time minus the device time converted to ns, at the anchor: in the ns base the offset
  // between the clocks; in a tick base the CPU time at tick 0 (boot, for the TSC).
  int64_t offset_ns() const;
  // Half-width of the tightest bracket seen: the precision of any single mapping.
  uint64_t uncertainty_ns() const { return best_half_bracket_; }
  uint32_t time_base_changes() const { return changes_; }
  size_t sample_count() const { return samples_.size(); }

  // Forgets everything, the previous base's model included.
  void reset();

 private:
  struct Point {
    double dx;  // device - anchor device
    double dy;  // CPU midpoint - anchor CPU
  };
  struct Model {
    bool valid = false;
    uint64_t anchor_device = 0;
    uint64_t anchor_cpu = 0;
    double slope = 1.0;
    double intercept = 0.0;
  };
  void refit();
  void restart();  // a new time base: the current model becomes the previous one
  static uint64_t map(const Model& m, uint64_t device_ts);
  Model current_model() const;

  ClockCalibrationOptions opts_;
  std::vector<Point> samples_;
  uint64_t anchor_device_ = 0;
  uint64_t anchor_cpu_ = 0;
  double slope_ = 1.0;
  double intercept_ = 0.0;  // in dy units at dx = 0
  bool slope_fitted_ = false;
  double first_slope_ = 0.0;  // the first slope fitted in this base (skew in a tick base)
  Model previous_;
  uint64_t best_half_bracket_ = 0;
  uint32_t changes_ = 0;
};

// Takes `n` bracketed samples with the given clocks and returns the tightest one.
using TimestampFn = uint64_t (*)(void* ctx);
ClockSample best_of_burst(TimestampFn device, void* device_ctx, TimestampFn cpu, void* cpu_ctx,
                          int n);

}  // namespace sp::cupti
