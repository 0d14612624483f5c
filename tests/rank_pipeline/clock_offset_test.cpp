// The clock offset estimator against a simulated server whose clock is shifted by a known offset,
// with asymmetric random delays on the way there and back.
#include "clock/clock_offset.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace sp::rank_pipeline {
namespace {

using Steady = std::chrono::steady_clock;

struct SimulatedLink {
  int64_t client_now = 1'000'000'000'000;  // the client's clock (ns); true time = this
  int64_t server_offset = 0;               // server clock = true time + offset
  std::mt19937_64 rng{42};
  std::vector<ClockSample> seen;           // every sample, as the estimator saw it

  // Out: mostly 40-60 us, sometimes a 5 ms hiccup; back: slower and wider (20-400 us).
  int64_t delay_out() {
    std::uniform_int_distribution<int64_t> base(40'000, 60'000), coin(0, 9);
    return base(rng) + (coin(rng) == 0 ? 5'000'000 : 0);
  }
  int64_t delay_back() { return std::uniform_int_distribution<int64_t>(20'000, 400'000)(rng); }

  LocalClock clock() {
    return [this] { return client_now; };
  }
  TimeRequest request() {
    return [this](int, Steady::time_point, std::string*) -> std::optional<int64_t> {
      const int64_t t1 = client_now;
      client_now += delay_out();
      const int64_t server = client_now + server_offset;
      client_now += delay_back();
      seen.push_back({t1, server, client_now});
      return server;
    };
  }
};

TEST(ClockOffset, RecoversAKnownOffsetWithinItsUncertainty) {
  for (const int64_t offset : {int64_t{0}, int64_t{250'000'000}, int64_t{-3'600'000'000'000},
                               int64_t{7'777}}) {
    SimulatedLink link;
    link.server_offset = offset;
    ClockEstimatorOptions o;
    o.round_trips = 12;
    const ClockEstimate e = estimate_clock_offset(o, link.clock(), link.request());
    ASSERT_TRUE(e.ok) << e.error;
    EXPECT_EQ(e.samples, 12);
    EXPECT_LE(std::llabs(e.offset_ns - offset), e.uncertainty_ns) << "offset " << offset;
    // The best sample's round trip: out >= 40 us and back >= 20 us, no hiccup.
    EXPECT_GE(e.rtt_ns, 60'000);
    EXPECT_LT(e.rtt_ns, 500'000);
    EXPECT_EQ(e.uncertainty_ns, (e.rtt_ns + 1) / 2);
  }
}

TEST(ClockOffset, TakesTheSampleWithTheSmallestRoundTrip) {
  SimulatedLink link;
  link.server_offset = 123'456'789;
  ClockEstimatorOptions o;
  o.round_trips = 16;
  const ClockEstimate e = estimate_clock_offset(o, link.clock(), link.request());
  ASSERT_TRUE(e.ok);
  ASSERT_EQ(link.seen.size(), 16u);
  const ClockSample* best = &link.seen[0];
  for (const ClockSample& s : link.seen) {
    if (s.rtt_ns() < best->rtt_ns()) best = &s;
  }
  EXPECT_EQ(e.rtt_ns, best->rtt_ns());
  EXPECT_EQ(e.offset_ns, best->offset_ns());
  EXPECT_EQ(e.at_ns, best->t1_ns + best->rtt_ns() / 2);
}

TEST(ClockOffset, PicksMinimumRoundTripFromGivenSamples) {
  const std::vector<ClockSample> samples = {
      {0, 1'000'500, 1'000},   // rtt 1000 -> offset 1'000'000
      {2'000, 1'002'100, 2'200},  // rtt 200 -> offset 1'000'000
      {3'000, 5'000'000, 9'000},  // rtt 6000
  };
  const ClockEstimate e = best_sample_estimate(samples);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.rtt_ns, 200);
  EXPECT_EQ(e.offset_ns, 1'000'000);
  EXPECT_EQ(e.uncertainty_ns, 100);
}

TEST(ClockOffset, ATimeoutGivesOffsetZeroAndTheError) {
  int calls = 0;
  const ClockEstimate e = estimate_clock_offset(
      ClockEstimatorOptions{}, [] { return int64_t{5}; },
      [&](int, Steady::time_point, std::string* err) -> std::optional<int64_t> {
        ++calls;
        *err = "no answer from rank 0 within 30000 ms";
        return std::nullopt;
      });
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.offset_ns, 0);
  EXPECT_EQ(e.samples, 0);
  EXPECT_EQ(calls, 1);  // no point asking again once the first request timed out
  EXPECT_EQ(e.error, "no answer from rank 0 within 30000 ms");
}

TEST(ClockOffset, ALaterTimeoutKeepsTheSamplesSoFar) {
  SimulatedLink link;
  link.server_offset = -42'000'000;
  auto inner = link.request();
  const ClockEstimate e = estimate_clock_offset(
      ClockEstimatorOptions{}, link.clock(),
      [&](int i, Steady::time_point d, std::string* err) -> std::optional<int64_t> {
        if (i == 3) {
          *err = "timed out";
          return std::nullopt;
        }
        return inner(i, d, err);
      });
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.samples, 3);
  EXPECT_LE(std::llabs(e.offset_ns - link.server_offset), e.uncertainty_ns);
}

TEST(ClockOffset, TheBudgetBoundsTheRoundTrips) {
  ClockEstimatorOptions o;
  o.round_trips = 1000;
  o.budget = std::chrono::milliseconds(30);
  int64_t now = 0;
  const ClockEstimate e = estimate_clock_offset(
      o, [&] { return now; },
      [&](int, Steady::time_point, std::string*) -> std::optional<int64_t> {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        now += 1000;
        return now;
      });
  ASSERT_TRUE(e.ok);
  EXPECT_LT(e.samples, 20);  // ~1 + 30 ms / 5 ms
}

TEST(SkewTracker, SlopeOfSuccessiveOffsetsInPpm) {
  SkewTracker skew(16, 1'000'000'000);
  EXPECT_FALSE(skew.ppm());
  // The server's clock gains 50 us per second on ours (+50 ppm), estimates every 10 s with
  // +-5 us of noise.
  const int64_t noise[] = {3'000, -5'000, 1'000, 4'000, -2'000, 0};
  for (int k = 0; k < 6; ++k) {
    ClockEstimate e;
    e.ok = true;
    e.at_ns = int64_t{k} * 10'000'000'000;
    e.offset_ns = 7'000'000 + k * 500'000 + noise[k];
    skew.add(e);
    if (k == 0) {
      EXPECT_FALSE(skew.ppm());
    }
  }
  ASSERT_TRUE(skew.ppm());
  EXPECT_NEAR(*skew.ppm(), 50.0, 1.0);
  ClockEstimate failed;  // failures do not count
  skew.add(failed);
  EXPECT_EQ(skew.size(), 6u);
}

TEST(SkewTracker, ProjectsTheLastOffsetForwardBySkew) {
  SkewTracker skew(16, 1'000'000'000);
  EXPECT_FALSE(skew.projected_offset(0)) << "no skew known yet";
  for (int k = 0; k < 3; ++k) {
    ClockEstimate e;
    e.ok = true;
    e.at_ns = int64_t{k} * 60'000'000'000;          // an estimate a minute
    e.offset_ns = -2'000'000 + k * 1'200'000;       // +20 ppm
    skew.add(e);
  }
  const int64_t last_at = 120'000'000'000, last_offset = 400'000;
  ASSERT_TRUE(skew.projected_offset(last_at));
  EXPECT_NEAR(static_cast<double>(*skew.projected_offset(last_at)), last_offset, 1.0);
  // 30 s after the last estimate: 600 us further.
  EXPECT_NEAR(static_cast<double>(*skew.projected_offset(last_at + 30'000'000'000)), last_offset + 600'000, 10.0);
}

}  // namespace
}  // namespace sp::rank_pipeline
