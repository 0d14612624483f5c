// The runtime's regions tag the GPU work they launch: sp_region_begin / sp_region_end (the C ABI
// of the runtime core) push and pop CUPTI external-correlation ids through the GPU layer, the
// kernels launched inside come back attributed to the region, and the region's GPU span reaches
// the step summary of the step that launched it, with the region's kind and micro-batch and the
// CUPTI time source. Runtime core and GPU layer linked together, as in libstraggler_probe.so;
// CUPTI is the fake one, so no GPU is needed.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "fake_cupti.h"
#include "probe_test_util.h"
#include "straggler_probe/gpu/cupti_c_api.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/log.h"
#include "straggler_probe/probe.h"
#include "straggler_probe/runtime.h"
#include "straggler_probe/step_summary.h"

namespace sp::gpu {
namespace {

using cupti::testing::fake_cupti;
using cupti::testing::fake_cupti_api;
using cupti::testing::fake_device_time;
using cupti::testing::fake_cpu_now;
using cupti::testing::SyntheticActivityBuffer;

RegionKey decoded(uint64_t id) {
  RegionKey key;
  EXPECT_TRUE(decode_region_id(id, &key)) << std::hex << id;
  return key;
}

class RuntimeRegionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cupti::testing::reset_fake_cupti();
    sp::runtime::log::reset_for_tests();
    sp::runtime::log::set_silent(true);
    CuptiCapture::instance().reset_for_tests();
    const sp_config cfg = runtime::testing::test_config();
    ASSERT_EQ(sp_init(&cfg), SP_OK) << sp_last_warning();
  }
  void TearDown() override {
    CuptiCapture::instance().reset_for_tests();
    sp_shutdown();
    runtime::StepSummary s;
    while (runtime::pop_summary(&s, std::chrono::milliseconds(0)) == runtime::PopStatus::kOk) {
    }
    sp::runtime::log::set_silent(false);
  }
  static bool start_capture() {
    CuptiCaptureOptions o;
    o.flush_period_ms = 0;  // no thread: the test drives the flush windows
    o.buffer_bytes = 64 * 1024;
    o.max_buffers = 4;
    o.attribution = RegionAttributionMode::kExternalCorrelation;  // the fake CUPTI's tags
    return CuptiCapture::instance().start_with(fake_cupti_api(), 13, 130001, o);
  }
};

TEST_F(RuntimeRegionsTest, RegionsPushTheirKindMicrobatchAndStepAndPopOnEnd) {
  ASSERT_TRUE(start_capture());
  ASSERT_EQ(sp_mark_step(6), SP_OK);  // regions from now on belong to step 7
  const uint32_t name = sp_intern("decoder");
  const uint64_t fwd = sp_region_begin(SP_OP_FORWARD, 3, name);
  ASSERT_NE(fwd, 0u);
  ASSERT_EQ(fake_cupti().pushed.size(), 1u);
  EXPECT_EQ(decoded(fake_cupti().pushed[0]), (RegionKey{SP_OP_FORWARD, 3, name}));
  EXPECT_EQ(fake_cupti().pushed[0] & kRegionSerialMask, 7u) << "the serial is the step";

  const uint64_t inner = sp_region_begin(SP_OP_OTHER, 3, 0);
  ASSERT_EQ(fake_cupti().pushed.size(), 2u) << "nested regions nest on CUPTI's stack";
  EXPECT_EQ(sp_region_end(inner), SP_OK);
  ASSERT_EQ(fake_cupti().pushed.size(), 1u);
  EXPECT_EQ(decoded(fake_cupti().pushed[0]).kind, static_cast<uint32_t>(SP_OP_FORWARD));
  EXPECT_EQ(sp_region_end(fwd), SP_OK);
  EXPECT_TRUE(fake_cupti().pushed.empty());
}

TEST_F(RuntimeRegionsTest, EndingAnOuterRegionAlsoPopsTheTagsOfInnerRegionsLeftOpen) {
  ASSERT_TRUE(start_capture());
  const uint64_t outer = sp_region_begin(SP_OP_BACKWARD, 0, 0);
  sp_region_begin(SP_OP_OTHER, 0, 0);  // never ended: an exception unwound past it
  sp_region_begin(SP_OP_OTHER, 1, 0);
  ASSERT_EQ(fake_cupti().pushed.size(), 3u);
  sp_region_end(outer);
  EXPECT_TRUE(fake_cupti().pushed.empty());
  sp_region_end(outer);  // ended twice: pops nothing more
  sp_region_end(12345);  // a token this thread never got
  EXPECT_TRUE(fake_cupti().pushed.empty());
}

TEST_F(RuntimeRegionsTest, NestingStaysBalancedAcrossAPause) {
  ASSERT_TRUE(start_capture());
  const uint64_t a = sp_region_begin(SP_OP_FORWARD, 0, 0);
  ASSERT_EQ(fake_cupti().pushed.size(), 1u);
  ASSERT_TRUE(CuptiCapture::instance().pause("torch.profiler"));
  const uint64_t b = sp_region_begin(SP_OP_OTHER, 0, 0);  // paused: no tag
  EXPECT_EQ(fake_cupti().pushed.size(), 1u);
  ASSERT_TRUE(CuptiCapture::instance().resume());
  sp_region_end(b);  // pushed nothing, so pops nothing: a's tag stays
  ASSERT_EQ(fake_cupti().pushed.size(), 1u);
  EXPECT_EQ(decoded(fake_cupti().pushed[0]).kind, static_cast<uint32_t>(SP_OP_FORWARD));

  const uint64_t c = sp_region_begin(SP_OP_OPTIMIZER, -1, 0);
  ASSERT_TRUE(CuptiCapture::instance().pause("torch.profiler"));
  sp_region_end(c);  // pushed before the pause: popped during it
  sp_region_end(a);
  EXPECT_TRUE(fake_cupti().pushed.empty());
}

TEST_F(RuntimeRegionsTest, NoTagsWhileCaptureIsOffOrTheRuntimeIsNotRecording) {
  const uint64_t t = sp_region_begin(SP_OP_FORWARD, 0, 0);  // capture never started
  EXPECT_NE(t, 0u);
  sp_region_end(t);
  EXPECT_TRUE(fake_cupti().all_pushed.empty());

  ASSERT_TRUE(start_capture());
  sp_shutdown();
  EXPECT_EQ(sp_region_begin(SP_OP_FORWARD, 0, 0), 0u);
  sp_region_end(0);
  EXPECT_TRUE(fake_cupti().all_pushed.empty()) << "a region the runtime does not record";
}

TEST_F(RuntimeRegionsTest, TheRegionsGpuSpanReachesTheStepThatLaunchedIt) {
  ASSERT_TRUE(start_capture());
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  const uint64_t t = sp_region_begin(SP_OP_BACKWARD, 2, 0);
  ASSERT_EQ(fake_cupti().pushed.size(), 1u);
  const uint64_t id = fake_cupti().pushed[0];
  const uint64_t h = fake_cpu_now();
  sp_region_end(t);
  ASSERT_EQ(sp_mark_step(1), SP_OK);

  // The kernels complete, and their records arrive, after step 1 was marked.
  SyntheticActivityBuffer b;
  b.external(cupti::kProbeExternalKind, id, 1).kernel(fake_device_time(h), fake_device_time(h + 4000), 1, "gemm_bwd");
  b.external(cupti::kProbeExternalKind, id, 2).kernel(fake_device_time(h + 6000), fake_device_time(h + 9000), 2, "reduce_bwd");
  fake_cupti().pending.push_back(b);
  ASSERT_TRUE(CuptiCapture::instance().flush_now());
  ASSERT_TRUE(CuptiCapture::instance().flush_now());
  ASSERT_EQ(CuptiCapture::instance().stats().events_emitted, 1u);
  ASSERT_EQ(sp_mark_step(2), SP_OK);
  ASSERT_EQ(sp_shutdown(), SP_OK);

  std::vector<runtime::StepSummary> steps;
  runtime::StepSummary s;
  while (runtime::pop_summary(&s, std::chrono::milliseconds(0)) == runtime::PopStatus::kOk) {
    steps.push_back(s);
  }
  const sp_event* gpu = nullptr;
  const sp_event* host = nullptr;
  int64_t gpu_step = -100;
  for (const runtime::StepSummary& st : steps) {
    for (const sp_event& ev : st.ops) {
      if (ev.kind != SP_OP_BACKWARD) continue;
      if (ev.time_source == SP_TIME_CUPTI) {
        gpu = &ev;
        gpu_step = st.step;
      } else if (ev.time_source == SP_TIME_CPU) {
        host = &ev;
      }
    }
    if (gpu != nullptr) break;
  }
  ASSERT_NE(host, nullptr);
  ASSERT_NE(gpu, nullptr) << "the CUPTI span of the backward is in a summary";
  EXPECT_EQ(gpu_step, 1) << "filed under the step that launched it, not the one it arrived in";
  EXPECT_EQ(gpu->microbatch, 2);
  EXPECT_NEAR(static_cast<double>(gpu->end_ns - gpu->start_ns), 9000.0, 20.0);

  const std::string report = [] {
    std::string text(sp_cupti_report(nullptr, 0, 5), '\0');
    sp_cupti_report(text.data(), text.size() + 1, 5);
    return text;
  }();
  EXPECT_EQ(report.rfind("GPU capture active: CUPTI 13, 2 kernels", 0), 0u) << report;
  EXPECT_NE(report.find(", 0 records dropped, 0 buffers refused\n"), std::string::npos)
      << "losses are stated with the figures:\n" << report;
  const size_t backward = report.find("\nbackward:\n");
  ASSERT_NE(backward, std::string::npos) << report;
  EXPECT_LT(report.find("  gemm_bwd count=1 total_us=4 max_us=4"),
            report.find("  reduce_bwd count=1 total_us=3 max_us=3"))
      << "by total time, largest first:\n" << report;
}

// One log (issue 11): a warning of the GPU layer is the runtime's last warning, so the C ABI
// (sp_last_warning, what the Python package and tools read) reaches it.
TEST_F(RuntimeRegionsTest, AGpuWarningIsTheRuntimesLastWarning) {
  fake_cupti().enable_result = cupti::kCuptiErrorUnknown;
  CuptiCaptureOptions o;
  o.flush_period_ms = 0;
  CuptiCapture capture;
  EXPECT_FALSE(capture.start_with(fake_cupti_api(), 13, 130001, o));
  const std::string last = sp_last_warning();
  EXPECT_NE(last.find("GPU kernel capture disabled"), std::string::npos) << last;
  EXPECT_EQ(sp::runtime::log::warning_count(), 1u);
}

TEST(CuptiReport, SaysWhyCaptureIsInactive) {
  CuptiCapture capture;
  EXPECT_EQ(capture.report(5),
            "GPU capture inactive: not started (no sp_cupti_start and no CUDA communicator yet)\n");
  cupti::testing::reset_fake_cupti();
  sp::runtime::log::set_silent(true);
  fake_cupti().enable_result = cupti::kCuptiErrorUnknown;
  CuptiCaptureOptions o;
  o.flush_period_ms = 0;
  EXPECT_FALSE(capture.start_with(fake_cupti_api(), 13, 130001, o));
  EXPECT_EQ(capture.report(5).rfind("GPU capture inactive: ", 0), 0u);
  EXPECT_NE(capture.report(5).find("no CUDA driver or GPU?"), std::string::npos) << capture.report(5);
  sp::runtime::log::set_silent(false);
}

}  // namespace
}  // namespace sp::gpu
