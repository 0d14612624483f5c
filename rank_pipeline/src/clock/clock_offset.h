// Estimating this rank's clock offset to rank 0's, NTP style, from request/response round trips:
// the client reads its clock (t1), asks the server for its time (ts), reads its clock again (t4).
// Whatever the delays, ts was taken between t1 and t4, so offset = ts - (t1 + t4) / 2 is right to
// within rtt / 2 (rtt = t4 - t1). Of several round trips the one with the smallest rtt is the
// tightest bound; successive estimates give the skew (ppm) as the slope of offset over time.
//
// Pure: the transport (how a request reaches the server) and the clock come in as functions, so
// that the unit tests drive it with a simulated server and the pipeline with the job's store.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sp::rank_pipeline {

struct ClockSample {
  int64_t t1_ns = 0;      // client clock, request sent
  int64_t server_ns = 0;  // server clock, request answered
  int64_t t4_ns = 0;      // client clock, answer seen
  int64_t rtt_ns() const { return t4_ns - t1_ns; }
  int64_t offset_ns() const { return server_ns - (t1_ns + rtt_ns() / 2); }
};

struct ClockEstimate {
  bool ok = false;
  int64_t offset_ns = 0;       // add to this clock's times to get the server's (0 when !ok)
  int64_t uncertainty_ns = 0;  // |true offset - offset_ns| <= this (half the best rtt)
  int64_t rtt_ns = 0;          // the best round trip
  int64_t at_ns = 0;           // client clock at the best sample's midpoint
  int samples = 0;             // round trips that got an answer
  std::string error;           // why !ok
};

// The estimate from the sample with the smallest round trip; !ok when there is none.
ClockEstimate best_sample_estimate(const std::vector<ClockSample>& samples);

struct ClockEstimatorOptions {
  int round_trips = 12;
  // The first answer may wait for the server to get to us (it serves one client at a time).
  std::chrono::milliseconds first_timeout{30000};
  // All round trips after the first, together.
  std::chrono::milliseconds budget{1000};
};

// Asks the server for its time: round trip `index`, giving up at `deadline`. nullopt (and a
// one-line error) when no answer came in time or the transport failed.
using TimeRequest = std::function<std::optional<int64_t>(
    int index, std::chrono::steady_clock::time_point deadline, std::string* error)>;
using LocalClock = std::function<int64_t()>;

// Runs up to options.round_trips requests (stopping at the first failure or when the budget is
// spent) and returns the best sample's estimate. No answer at all: !ok, offset 0, the error.
ClockEstimate estimate_clock_offset(const ClockEstimatorOptions& options, const LocalClock& clock,
                                    const TimeRequest& request);

// The skew between the two clocks from successive estimates: the least-squares slope of offset
// over local time, in parts per million (positive: the server's clock runs faster).
class SkewTracker {
 public:
  explicit SkewTracker(size_t keep = 16, int64_t min_span_ns = 1'000'000'000)
      : keep_(keep), min_span_ns_(min_span_ns) {}
  void add(const ClockEstimate& estimate);
  // nullopt until two estimates at least min_span apart.
  std::optional<double> ppm() const;
  // The offset at local time now_ns: the last estimate carried forward by the skew (10 ppm is
  // 10 us per second, 600 us between two estimates a minute apart). nullopt until ppm() is known.
  std::optional<int64_t> projected_offset(int64_t now_ns) const;
  size_t size() const { return points_.size(); }

 private:
  struct Point {
    int64_t at_ns, offset_ns;
  };
  size_t keep_;
  int64_t min_span_ns_;
  std::deque<Point> points_;
};

}  // namespace sp::rank_pipeline
