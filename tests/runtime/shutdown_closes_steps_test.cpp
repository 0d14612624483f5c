// Steps marked just before the end (within the grace period for late events) must not be lost:
// sp_shutdown and sp_flush close every marked step at once, and all of them stay poppable even
// when there are more than the queue's capacity (the job's last steps are what a user reads).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "probe_test_util.h"

namespace sp::runtime::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kSteps = 40;          // more than the queue holds (queue_steps below)
constexpr uint32_t kQueueSteps = 8;
constexpr uint32_t kGraceMs = 600000;  // ten minutes: nothing closes by age in this test

class LastSteps : public ::testing::Test {
 protected:
  void TearDown() override {
    sp_shutdown();
    pop_all();
  }
  void start() {
    const sp_config cfg = test_config([](sp_config& c) {
      c.step_grace_ms = kGraceMs;
      c.queue_steps = kQueueSteps;
    });
    ASSERT_EQ(sp_init(&cfg), SP_OK) << sp_last_warning();
  }
  // kSteps steps of one forward each, marked back to back.
  static void record_steps() {
    for (int step = 1; step <= kSteps; ++step) {
      const sp_event ev = event_now(SP_OP_FORWARD, 1000);
      ASSERT_EQ(sp_record(&ev), SP_OK);
      ASSERT_EQ(sp_mark_step(step), SP_OK);
    }
  }
  static void expect_every_step(const std::vector<StepSummary>& got) {
    ASSERT_EQ(got.size(), static_cast<size_t>(kSteps));
    for (int i = 0; i < kSteps; ++i) {
      EXPECT_EQ(got[i].step, i + 1);
      ASSERT_EQ(got[i].ops.size(), 1u) << "step " << i + 1;
      EXPECT_EQ(got[i].ops[0].kind, static_cast<uint32_t>(SP_OP_FORWARD));
    }
    EXPECT_EQ(stats().steps_skipped, 0u);
  }
};

TEST_F(LastSteps, ShutdownRightAfterTheMarksKeepsEveryStep) {
  start();
  record_steps();
  ASSERT_EQ(sp_shutdown(), SP_OK);
  expect_every_step(pop_all());
}

TEST_F(LastSteps, FlushClosesEveryMarkedStepWithoutTheGrace) {
  start();
  record_steps();
  ASSERT_EQ(sp_flush(), SP_OK);
  // The consumer's next pass closes them all; the first pop waits for it, the rest are queued.
  std::vector<StepSummary> got;
  StepSummary s;
  if (pop_summary(&s, 10s) == PopStatus::kOk) got.push_back(std::move(s));
  for (auto& m : pop_all(2s)) got.push_back(std::move(m));
  expect_every_step(got);
  EXPECT_EQ(stats().steps_completed, static_cast<uint64_t>(kSteps));
}

}  // namespace
}  // namespace sp::runtime::testing
