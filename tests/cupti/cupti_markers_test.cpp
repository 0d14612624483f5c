// Region attribution by launch markers, through the whole capture against a fake CUPTI and a
// fake CUDA driver: what is enabled (no API records, no external correlation), the markers at
// region boundaries, kernels of any thread attributed by launch order, held activities, a failing
// driver, and durations in a TSC time base.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "loader/cupti_records.h"
#include "fake_cuda_driver.h"
#include "fake_cupti.h"
#include "attribution/launch_markers.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/gpu/graph_capture.h"
#include "straggler_probe/log.h"

namespace sp::gpu {
namespace {

using cupti::testing::fake_cupti;
using cupti::testing::fake_cupti_api;
using cupti::testing::fake_device_time;
using cupti::testing::fake_driver;
using cupti::testing::fake_cpu_now;
using cupti::testing::SyntheticActivityBuffer;

std::vector<sp_event> g_events;

int capture_event(const sp_event* ev, void*) {
  g_events.push_back(*ev);
  return SP_OK;
}

class CuptiMarkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cupti::testing::reset_fake_cupti();
    cupti::testing::reset_fake_driver();
    sp::runtime::log::reset_for_tests();
    sp::runtime::log::set_silent(true);
    set_event_sink(&capture_event, nullptr);
    g_events.clear();
    opts_.flush_period_ms = 0;
    opts_.buffer_bytes = 64 * 1024;
    opts_.max_buffers = 4;
    capture_.set_cuda_driver_for_tests(cupti::testing::fake_driver_api());
  }
  void TearDown() override {
    capture_.stop();
    set_event_sink(nullptr, nullptr);
    sp::runtime::log::set_silent(false);
  }
  bool start() { return capture_.start_with(fake_cupti_api(), 13, 130001, opts_); }
  static uint64_t device(uint64_t host) { return fake_device_time(host); }

  // A marker's record: the memset the probe launched, with its value, at correlation `corr`.
  static void marker(SyntheticActivityBuffer& b, uint32_t value, uint32_t corr, uint64_t host) {
    b.memset_rec(device(host), device(host + 1000), corr, 4, value);
  }

  CuptiCaptureOptions opts_;
  CuptiCapture capture_;
};

TEST_F(CuptiMarkersTest, EnablesNoApiRecordsAndNoExternalCorrelation) {
  ASSERT_TRUE(start());
  const auto& f = fake_cupti();
  EXPECT_EQ(f.enabled.size(), 3u) << "kernels, memcpys, memsets (the markers)";
  for (uint32_t k : {cupti::kKindDriver, cupti::kKindRuntime, cupti::kKindExternalCorrelation}) {
    EXPECT_EQ(std::count(f.enabled.begin(), f.enabled.end(), k), 0) << "kind " << k;
  }
  EXPECT_TRUE(f.driver_cbids_on.empty());
}

TEST_F(CuptiMarkersTest, KernelsLaunchedBetweenARegionsMarkersAreItsFromAnyThread) {
  ASSERT_TRUE(start());
  ASSERT_TRUE(capture_.push_region(SP_OP_BACKWARD, 0, 0));
  capture_.pop_region();
  ASSERT_EQ(fake_driver().values.size(), 2u);
  EXPECT_EQ(fake_driver().streams, 1) << "one marker stream per context";
  const uint32_t v_begin = fake_driver().values[0];
  const uint32_t v_end = fake_driver().values[1];
  EXPECT_TRUE(cupti::LaunchMarkers::is_marker_value(v_begin, 4));
  EXPECT_GT(fake_driver().capture_mode_exchanges, 0) << "a marker never joins a graph capture";

  const uint64_t h = fake_cpu_now();
  SyntheticActivityBuffer b;
  b.kernel(device(h), device(h + 500), 9, "before");
  marker(b, v_begin, 10, h);
  // Launched by autograd's device thread onto another stream: only its launch order counts.
  b.kernel(device(h + 2000), device(h + 6000), 11, "bwd_a");
  b.kernel(device(h + 6000), device(h + 9000), 12, "bwd_b");
  marker(b, v_end, 13, h + 1500);  // the marker stream is idle: it runs before the kernels
  b.kernel(device(h + 9000), device(h + 9500), 14, "after");
  b.memset_rec(device(h), device(h + 10), 15, 4, 0);  // the job's own 4-byte memset
  fake_cupti().pending.push_back(b);
  ASSERT_TRUE(capture_.flush_now());
  ASSERT_TRUE(capture_.flush_now());
  ASSERT_TRUE(capture_.flush_now(/*forced=*/true));

  ASSERT_EQ(g_events.size(), 1u);
  EXPECT_EQ(g_events[0].kind, static_cast<uint32_t>(SP_OP_BACKWARD));
  EXPECT_EQ(g_events[0].time_source, static_cast<uint32_t>(SP_TIME_CUPTI));
  EXPECT_NEAR(static_cast<double>(g_events[0].end_ns - g_events[0].start_ns), 7000.0, 10.0);
  const CuptiCaptureStats s = capture_.stats();
  EXPECT_EQ(s.tagged_activities, 2u);
  EXPECT_EQ(s.untagged_activities, 3u) << "before, after, and the job's memset";
  EXPECT_EQ(s.markers_issued, 2u);
  EXPECT_EQ(s.markers_lost, 0u);
  const std::string report = capture_.report(5);
  EXPECT_NE(report.find("bwd_b"), std::string::npos);
  EXPECT_NE(report.find("attribution: launch markers"), std::string::npos) << report;
}

TEST_F(CuptiMarkersTest, AKernelWaitsForAMarkerLaunchedAfterIt) {
  ASSERT_TRUE(start());
  ASSERT_TRUE(capture_.push_region(SP_OP_FORWARD, 1, 0));
  const uint32_t v_begin = fake_driver().values.at(0);
  const uint64_t h = fake_cpu_now();
  SyntheticActivityBuffer w1;
  marker(w1, v_begin, 20, h);
  w1.kernel(device(h + 100), device(h + 900), 21, "fwd");
  fake_cupti().pending.push_back(w1);
  ASSERT_TRUE(capture_.flush_now());
  EXPECT_EQ(capture_.stats().tagged_activities, 0u) << "held: an inner region may begin first";
  capture_.pop_region();
  SyntheticActivityBuffer w2;
  marker(w2, fake_driver().values.at(1), 22, h + 1000);
  fake_cupti().pending.push_back(w2);
  ASSERT_TRUE(capture_.flush_now());
  EXPECT_EQ(capture_.stats().tagged_activities, 1u);
}

TEST_F(CuptiMarkersTest, NoContextNoMarkerAndAFailingDriverStopsAttributionWithOneWarning) {
  fake_driver().has_context = false;
  ASSERT_TRUE(start());
  EXPECT_FALSE(capture_.push_region(SP_OP_FORWARD, 0, 0)) << "nothing launched, nothing to end";
  capture_.pop_region();
  EXPECT_TRUE(fake_driver().values.empty());
  fake_driver().has_context = true;
  fake_driver().memset_result = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS, say
  EXPECT_FALSE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  EXPECT_FALSE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  EXPECT_EQ(sp::runtime::log::warning_count(), 1u);
  EXPECT_NE(sp::runtime::log::last_warning().find("CUDA_ERROR_FAKE (700)"), std::string::npos);
  const CuptiCaptureStats s = capture_.stats();
  EXPECT_EQ(s.marker_failures, 1u) << "the second push finds the markers off";
  EXPECT_TRUE(s.active) << "kernels are still captured";
}

TEST_F(CuptiMarkersTest, NoMarkerDuringAGraphCapture) {
  ASSERT_TRUE(start());
  graph_capture_begin();
  EXPECT_FALSE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  graph_capture_end();
  reset_graph_capture_for_tests();
  EXPECT_TRUE(fake_driver().values.empty());
}

TEST_F(CuptiMarkersTest, PauseEndsEveryBracketAndResumeBracketsAgain) {
  ASSERT_TRUE(start());
  ASSERT_TRUE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  ASSERT_TRUE(capture_.pause("torch.profiler"));
  capture_.pop_region();
  EXPECT_EQ(fake_driver().values.size(), 1u) << "no end marker while paused";
  EXPECT_FALSE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  ASSERT_TRUE(capture_.resume());
  EXPECT_TRUE(capture_.push_region(SP_OP_FORWARD, 0, 0));
  capture_.pop_region();
  EXPECT_EQ(fake_driver().values.size(), 3u);
}

TEST_F(CuptiMarkersTest, RegionDurationsAreNanosecondsInATscTimeBase) {
  fake_cupti().clock_rate = 2.1;  // a 2.1 GHz TSC: Kineto's timestamp callback
  ASSERT_TRUE(start());
  ASSERT_TRUE(capture_.push_region(SP_OP_OPTIMIZER, -1, 0));
  capture_.pop_region();
  const uint64_t h = fake_cpu_now();
  SyntheticActivityBuffer b;
  marker(b, fake_driver().values.at(0), 30, h);
  b.kernel(device(h + 1000), device(h + 1'001'000), 31, "adam");  // 1 ms of CPU time
  marker(b, fake_driver().values.at(1), 32, h + 500);
  fake_cupti().pending.push_back(b);
  ASSERT_TRUE(capture_.flush_now());
  ASSERT_TRUE(capture_.flush_now());
  ASSERT_EQ(g_events.size(), 1u);
  EXPECT_NEAR(static_cast<double>(g_events[0].end_ns - g_events[0].start_ns), 1e6, 2e3);
  EXPECT_NEAR(static_cast<double>(g_events[0].start_ns), static_cast<double>(h + 1000), 2e5);
  const std::string report = capture_.report(3);
  const size_t at = report.find("total_us=");
  ASSERT_NE(at, std::string::npos) << report;
  EXPECT_NEAR(std::stod(report.substr(at + 9)), 1000.0, 2.0) << "microseconds, not ticks";
  const CuptiCaptureStats s = capture_.stats();
  EXPECT_EQ(s.time_base, 2) << "ticks";
  EXPECT_NEAR(s.ns_per_unit, 1.0 / 2.1, 1e-3);
}

}  // namespace
}  // namespace sp::gpu
