// CUPTI-to-probe clock mapping: offset, skew, a TSC time base, and a time-base switch.
#include <gtest/gtest.h>

#include <cmath>

#include "attribution/clock_calibration.h"

namespace sp::cupti {
namespace {

ClockSample sample(uint64_t device, uint64_t cpu_mid, uint64_t half_bracket = 500) {
  return ClockSample{device, cpu_mid - half_bracket, cpu_mid + half_bracket};
}

TEST(ClockCalibration, IdentityBeforeAnySample) {
  ClockCalibration c;
  EXPECT_FALSE(c.calibrated());
  EXPECT_EQ(c.to_cpu(123456789), 123456789u);
}

TEST(ClockCalibration, OffsetFromOneSample) {
  ClockCalibration c;
  const uint64_t cpu = 1'700'000'000'000'000'000ull;
  ASSERT_TRUE(c.add(sample(cpu - 2500, cpu)));
  EXPECT_EQ(c.offset_ns(), 2500);
  EXPECT_EQ(c.to_cpu(cpu - 2500 + 1'000'000), cpu + 1'000'000);
  EXPECT_EQ(c.uncertainty_ns(), 500u);
}

TEST(ClockCalibration, DiscardsWideBrackets) {
  ClockCalibration c;
  EXPECT_FALSE(c.add(sample(1000, 5'000'000, 1'000'000)));
  EXPECT_FALSE(c.calibrated());
}

TEST(ClockCalibration, EstimatesSkewInPpm) {
  ClockCalibration c;
  const uint64_t h0 = 1'700'000'000'000'000'000ull;
  const uint64_t d0 = 5'000'000'000ull;
  // The device clock runs 50 ppm fast: 1 s of CPU time is 1.00005 s of device time.
  for (int i = 0; i <= 10; ++i) {
    const uint64_t dh = static_cast<uint64_t>(i) * 1'000'000'000ull;
    const uint64_t dd = dh + dh / 20000;
    ASSERT_TRUE(c.add(sample(d0 + dd, h0 + dh, 200)));
  }
  ASSERT_TRUE(c.slope_fitted());
  EXPECT_NEAR(c.skew_ppm(), -50.0, 0.5) << "device faster => slope below 1";
  const uint64_t d = d0 + 5'000'000'000ull + 5'000'000'000ull / 20000;
  EXPECT_NEAR(static_cast<double>(c.to_cpu(d)), static_cast<double>(h0 + 5'000'000'000ull), 50);
  EXPECT_EQ(c.time_base_changes(), 0u);
}

TEST(ClockCalibration, FitsATscTimeBase) {
  ClockCalibration c;
  const uint64_t h0 = 1'700'000'000'000'000'000ull;
  // 3 GHz TSC: 3 ticks per ns.
  for (int i = 0; i < 5; ++i) {
    const uint64_t dh = static_cast<uint64_t>(i) * 10'000'000ull;
    ASSERT_TRUE(c.add(sample(1'000'000 + dh * 3, h0 + dh, 100)));
  }
  EXPECT_NEAR(c.slope(), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(static_cast<double>(c.to_cpu(1'000'000 + 3'000'000'000ull)),
              static_cast<double>(h0 + 1'000'000'000ull), 1000);
}

TEST(ClockCalibration, RestartsWhenTheTimeBaseChanges) {
  ClockCalibration c;
  const uint64_t h0 = 1'700'000'000'000'000'000ull;
  for (int i = 0; i < 4; ++i) {
    const uint64_t dh = static_cast<uint64_t>(i) * 100'000'000ull;
    ASSERT_TRUE(c.add(sample(h0 + dh, h0 + dh)));
  }
  ASSERT_TRUE(c.slope_fitted());
  // Now CUPTI reports TSC ticks (Kineto's timestamp callback): nothing like the model.
  const uint64_t h1 = h0 + 500'000'000ull;
  ASSERT_TRUE(c.add(sample(42'000'000'000ull, h1)));
  EXPECT_EQ(c.time_base_changes(), 1u);
  EXPECT_EQ(c.sample_count(), 1u);
  EXPECT_EQ(c.to_cpu(42'000'000'000ull), h1);
}

TEST(ClockCalibration, ATscBaseIsToldAndReportedInNanoseconds) {
  ClockCalibration c;
  const uint64_t h0 = 1'700'000'000'000'000'000ull;
  const uint64_t tsc0 = 157'000'000'000ull;  // 75 s after boot at 2.1 GHz
  for (int i = 0; i < 6; ++i) {
    const uint64_t dh = static_cast<uint64_t>(i) * 10'000'000ull;
    ASSERT_TRUE(c.add(sample(tsc0 + dh * 21 / 10, h0 + dh, 100)));
  }
  EXPECT_EQ(c.time_base(), ClockCalibration::TimeBase::kTicks);
  EXPECT_NEAR(c.ns_per_unit(), 1.0 / 2.1, 1e-6);
  // Issue 22: the skew was reported as -523809 ppm (the slope read as if a tick were a ns).
  EXPECT_NEAR(c.skew_ppm(), 0.0, 1.0);
  // The offset is the CPU time at tick 0 (boot), in ns: h0 - 75 s.
  EXPECT_NEAR(static_cast<double>(c.offset_ns()),
              static_cast<double>(h0) - static_cast<double>(tsc0) / 2.1, 1e4);
  // A 1 ms kernel is 2.1 M ticks long: mapped through the fit it is 1 ms again.
  const uint64_t start = tsc0 + 210'000'000ull;
  EXPECT_NEAR(static_cast<double>(c.to_cpu(start + 2'100'000) - c.to_cpu(start)), 1e6, 2.0);
}

TEST(ClockCalibration, RecordsOfTheOldBaseAfterASwitchMidWindowKeepTheirMapping) {
  // CUPTI ns until torch.profiler installs its TSC callback; one flush window then holds records
  // of both bases, the old ones written before the switch.
  ClockCalibration c;
  const uint64_t h0 = 1'700'000'000'000'000'000ull;
  for (int i = 0; i < 4; ++i) {
    const uint64_t dh = static_cast<uint64_t>(i) * 10'000'000ull;
    ASSERT_TRUE(c.add(sample(h0 + dh - 40, h0 + dh)));
  }
  EXPECT_EQ(c.time_base(), ClockCalibration::TimeBase::kNanoseconds);
  const uint64_t old_kernel_start = h0 + 35'000'000ull - 40;  // written before the switch
  const uint64_t h1 = h0 + 40'000'000ull;
  const uint64_t tsc1 = 160'000'000'000ull;
  ASSERT_TRUE(c.add(sample(tsc1, h1, 100)));
  ASSERT_TRUE(c.add(sample(tsc1 + 21'000'000ull, h1 + 10'000'000ull, 100)));
  EXPECT_EQ(c.time_base_changes(), 1u);
  EXPECT_EQ(c.time_base(), ClockCalibration::TimeBase::kTicks);
  // The old record still maps by the old model, the new ones by the new fit.
  EXPECT_NEAR(static_cast<double>(c.to_cpu(old_kernel_start)),
              static_cast<double>(h0 + 35'000'000ull), 200.0);
  EXPECT_NEAR(static_cast<double>(c.to_cpu(tsc1 + 2'100'000ull)),
              static_cast<double>(h1 + 1'000'000ull), 200.0);
  c.reset();
  EXPECT_EQ(c.to_cpu(old_kernel_start), old_kernel_start) << "reset forgets both models";
}

TEST(ClockCalibration, BestOfBurstKeepsTheTightestBracket) {
  struct Clocks {
    uint64_t cpu = 1000;
    int call = 0;
  } clocks;
  auto cpu = [](void* ctx) -> uint64_t {
    auto* c = static_cast<Clocks*>(ctx);
    // Alternating brackets: 450 ns wide, then 50 ns wide.
    c->cpu += (c->call++ % 4 < 2) ? 450 : 50;
    return c->cpu;
  };
  auto device = [](void* ctx) -> uint64_t { return static_cast<Clocks*>(ctx)->cpu + 7; };
  const ClockSample s = best_of_burst(device, &clocks, cpu, &clocks, 4);
  EXPECT_EQ(s.cpu_after - s.cpu_before, 50u);
}

}  // namespace
}  // namespace sp::cupti
