// The real CUPTI on a machine without a CUDA driver: it loads, Activity enabling fails, the probe
// prints one warning and stays out of the way. Also: our synthetic CUDA 13 buffers are walked by
// the real cuptiActivityGetNextRecord exactly as by our own walker.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "records/activity_parser.h"
#include "loader/cupti_loader.h"
#include "loader/cupti_records.h"
#include "records/record_iterator.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/log.h"
#include "straggler_probe/probe.h"
#include "synthetic_activity_buffer.h"

namespace sp::gpu {
namespace {

TEST(CuptiLoader, WithoutCudaInTheProcessItWaitsSilently) {
  if (cupti::resident_cupti_major() != 0 || cupti::resident_cudart_major() != 0) {
    GTEST_SKIP() << "CUDA libraries already loaded in this test process";
  }
  sp::runtime::log::reset_for_tests();
  const cupti::LoadedCupti l = cupti::load_cupti(cupti::LoaderOptions{});
  EXPECT_FALSE(l.ok());
  EXPECT_TRUE(l.retryable) << l.error;
  CuptiCapture capture;
  EXPECT_FALSE(capture.start());
  EXPECT_EQ(sp::runtime::log::warning_count(), 0u) << "a process without CUDA hears nothing from us";
}

TEST(CuptiLoader, RefusesAnExplicitLibraryThatDoesNotLoad) {
  cupti::LoaderOptions o;
  o.explicit_path = "/nonexistent/libcupti.so.13";
  const cupti::LoadedCupti l = cupti::load_cupti(o);
  EXPECT_FALSE(l.ok());
  EXPECT_NE(l.error.find("STRAGGLER_PROBE_CUPTI_LIB"), std::string::npos);
}

#ifdef SP_TEST_REAL_CUPTI
// Loads the real library as torch would (its own DT_NEEDED), before the probe looks.
void* load_real_cupti() { return dlopen(SP_TEST_REAL_CUPTI, RTLD_NOW | RTLD_GLOBAL); }

TEST(RealCuptiWithoutDriver, RefusesCuptiBeforeCallingItAndWarnsOnce) {
  std::string why;
  if (cupti::cuda_driver_available(&why)) GTEST_SKIP() << "a CUDA driver is installed here";
  ASSERT_NE(load_real_cupti(), nullptr) << dlerror();
  EXPECT_EQ(cupti::resident_cupti_major(), 13);
  const cupti::LoadedCupti l = cupti::load_cupti(cupti::LoaderOptions{});
  EXPECT_FALSE(l.ok());
  EXPECT_FALSE(l.retryable);
  EXPECT_NE(l.error.find("no CUDA driver"), std::string::npos) << l.error;

  sp::runtime::log::reset_for_tests();
  sp::runtime::log::set_silent(true);
  CuptiCapture capture;
  EXPECT_FALSE(capture.start());
  EXPECT_FALSE(capture.start()) << "no second attempt";
  sp::runtime::log::set_silent(false);
  EXPECT_EQ(sp::runtime::log::warning_count(), 1u);
  EXPECT_NE(sp::runtime::log::last_warning().find("GPU kernel capture disabled: no CUDA driver"),
            std::string::npos);
  capture.push_region(SP_OP_FORWARD, 0, 1);  // harmless no-ops
  capture.pop_region();
  capture.request_flush();
  EXPECT_FALSE(capture.stats().active);
}

TEST(RealCuptiWithoutDriver, ReusesTheResidentCopyAndDisablesWhenEnablingFails) {
  // CUPTI 13.0 itself survives calls without a driver: let the probe reach cuptiActivityEnable.
  ASSERT_NE(load_real_cupti(), nullptr) << dlerror();
  cupti::LoaderOptions o;
  o.require_driver = false;
  const cupti::LoadedCupti l = cupti::load_cupti(o);
  ASSERT_TRUE(l.ok()) << l.error;
  EXPECT_TRUE(l.was_loaded) << "RTLD_NOLOAD found the copy already in the process";
  EXPECT_EQ(l.major, 13);
  EXPECT_GE(l.version, 130000u);

  sp::runtime::log::reset_for_tests();
  sp::runtime::log::set_silent(true);
  CuptiCapture capture;
  CuptiCaptureOptions opts;
  opts.flush_period_ms = 0;
  EXPECT_FALSE(capture.start_with(l.api, l.major, l.version, opts));
  sp::runtime::log::set_silent(false);
  EXPECT_EQ(sp::runtime::log::warning_count(), 1u);
  EXPECT_NE(sp::runtime::log::last_warning().find("cuptiActivityEnable"), std::string::npos)
      << sp::runtime::log::last_warning();
  EXPECT_FALSE(capture.stats().active);
}

#ifdef SP_TEST_CRASHY_CUPTI
TEST(RealCuptiWithoutDriver, NeverCallsACuptiThatCrashesWithoutADriver) {
  // The CUDA 13.2 pip wheel's CUPTI overflows its stack on its first call without a driver.
  std::string why;
  if (cupti::cuda_driver_available(&why)) GTEST_SKIP() << "a CUDA driver is installed here";
  cupti::LoaderOptions o;
  o.explicit_path = SP_TEST_CRASHY_CUPTI;
  const cupti::LoadedCupti l = cupti::load_cupti(o);
  EXPECT_FALSE(l.ok());
  EXPECT_NE(l.error.find("no CUDA driver"), std::string::npos) << l.error;
}
#endif

TEST(RealCuptiWithoutDriver, WalksOurSyntheticBuffersLikeOurOwnWalker) {
  ASSERT_NE(load_real_cupti(), nullptr) << dlerror();
  cupti::LoaderOptions o;
  o.require_driver = false;  // CUPTI 13.0 walks buffers without a driver
  const cupti::LoadedCupti l = cupti::load_cupti(o);
  ASSERT_TRUE(l.ok()) << l.error;
  const uint64_t id = encode_region_id({SP_OP_BACKWARD, 1, 2}, 3);
  cupti::testing::SyntheticActivityBuffer b;
  b.kernel(100, 200, 1, "k1")
      .external(cupti::kProbeExternalKind, id, 1)
      .memcpy_rec(300, 400, 2, 64)
      .memset_rec(500, 600, 3, 32)
      .sync(700, 800, 4, 1)
      .cuda_event(900, 5, 6)
      .kernel(1000, 1100, 7, "k2");

  std::vector<uint32_t> kinds_ours, kinds_cupti;
  cupti::Cupti13RecordIterator ours;
  cupti::CuptiLibRecordIterator theirs(l.api);
  for (auto* it : std::vector<cupti::RecordIterator*>{&ours, &theirs}) {
    auto& kinds = it == &ours ? kinds_ours : kinds_cupti;
    uint8_t* rec = nullptr;
    while (it->next(b.data(), b.size(), &rec)) {
      uint32_t k = 0;
      std::memcpy(&k, rec, 4);
      kinds.push_back(k);
    }
    EXPECT_FALSE(it->stopped_early());
  }
  EXPECT_EQ(kinds_ours.size(), 7u);
  EXPECT_EQ(kinds_ours, kinds_cupti) << "CUPTI agrees with our record sizes";

  cupti::ActivityParser p(cupti::ParserOptions{.hold_windows = 0});
  std::vector<cupti::GpuActivity> out;
  cupti::BufferView v{b.data(), b.size()};
  p.parse_window(std::span<const cupti::BufferView>(&v, 1), theirs, out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].external_id, id);
  EXPECT_STREQ(out[0].name, "k1");
}
#endif

}  // namespace
}  // namespace sp::gpu
