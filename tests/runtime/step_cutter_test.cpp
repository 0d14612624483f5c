// Step cutting on the consumer side: which step each event lands in, when a step closes, and
// what is counted when events come too late or overflow.
#include <gtest/gtest.h>

#include <vector>

#include "probe_test_util.h"
#include "steps/step_cutter.h"

namespace sp::runtime {
namespace {

using testing::make_event;

sp_event tagged(uint64_t start, uint64_t end, int64_t step) {
  sp_event e = make_event(start, end);
  e.kind = SP_OP_KERNEL;
  e.step_plus_one = static_cast<uint64_t>(step + 1);
  return e;
}

struct Collector {
  std::vector<StepSummary> steps;
  StepCutter::Emit emit() {
    return [this](StepSummary&& s) { steps.push_back(std::move(s)); };
  }
};

std::vector<uint64_t> starts(const StepSummary& s) {
  std::vector<uint64_t> v;
  for (const auto& op : s.ops) v.push_back(op.start_ns);
  return v;
}

TEST(StepCutter, EventsGoToTheStepWhoseMarksEncloseTheirStart) {
  StepCutter a({}, /*origin_ns=*/1000);
  Collector c;
  a.add_event(make_event(1500, 1600));
  a.add_event(make_event(2000, 2100));  // exactly at mark 0: belongs to step 0, (origin, 2000]
  a.add_mark({0, 2000});
  a.add_event(make_event(2001, 2500));  // after the mark, before the next
  a.add_event(make_event(1900, 2600));  // published late, but started in step 0
  a.add_mark({1, 3000});
  a.add_event(make_event(3500, 3600));  // open step: stays pending
  a.close_ready(/*now=*/10000, /*grace=*/0, false, c.emit());

  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(c.steps[0].step, 0);
  EXPECT_EQ(c.steps[0].step_start_ns, 1000u);
  EXPECT_EQ(c.steps[0].step_end_ns, 2000u);
  EXPECT_EQ(starts(c.steps[0]), (std::vector<uint64_t>{1500, 1900, 2000}));  // sorted by start
  EXPECT_EQ(c.steps[1].step, 1);
  EXPECT_EQ(c.steps[1].step_start_ns, 2000u);
  EXPECT_EQ(starts(c.steps[1]), (std::vector<uint64_t>{2001}));
  EXPECT_EQ(a.discarded(), 0u);

  a.add_mark({2, 4000});
  a.close_ready(10000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 3u);
  EXPECT_EQ(starts(c.steps[2]), (std::vector<uint64_t>{3500}));
}

// A step's CPU time is the marking thread's CPU clock at its mark less at the previous one,
// when one thread made both marks; the first step (no previous mark) and a step marked from
// another thread than the one before are unknown (0).
TEST(StepCutter, TheStepCpuTimeIsTheMarkingThreadsBetweenItsTwoMarks) {
  StepCutter a({}, /*origin_ns=*/1000);
  Collector c;
  a.add_mark({0, 2000, false, /*thread_cpu_ns=*/500, /*thread_id=*/7});
  a.add_mark({1, 3000, false, 900, 7});
  a.add_mark({2, 4000, false, 950, 8});   // another thread
  a.add_mark({3, 5000, false, 1250, 8});
  a.add_mark({4, 6000, false, 0, 0});     // the clock could not be read
  a.close_ready(0, 0, /*force=*/true, c.emit());
  ASSERT_EQ(c.steps.size(), 5u);
  EXPECT_EQ(c.steps[0].step_cpu_ns, 0u);
  EXPECT_EQ(c.steps[1].step_cpu_ns, 400u);
  EXPECT_EQ(c.steps[2].step_cpu_ns, 0u);
  EXPECT_EQ(c.steps[3].step_cpu_ns, 300u);
  EXPECT_EQ(c.steps[4].step_cpu_ns, 0u);
}

TEST(StepCutter, WaitsForTheGracePeriodUnlessForced) {
  StepCutter a({}, 0);
  Collector c;
  a.add_mark({7, 1000});
  a.close_ready(/*now=*/1500, /*grace=*/1000, false, c.emit());
  EXPECT_TRUE(c.steps.empty());
  EXPECT_EQ(a.pending_steps(), 1u);
  a.add_event(make_event(900, 1400));  // arrives during the grace period: still counted in step 7
  a.close_ready(2000, 1000, false, c.emit());
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_EQ(c.steps[0].ops.size(), 1u);

  a.add_mark({8, 3000});
  a.close_ready(3001, 1000, /*force=*/true, c.emit());
  EXPECT_EQ(c.steps.size(), 2u);
}

TEST(StepCutter, LateEventsAreDiscardedAndCounted) {
  StepCutter a({}, 0);
  Collector c;
  a.add_mark({0, 1000});
  a.close_ready(5000, 0, false, c.emit());
  a.add_event(make_event(999, 1200));  // its step is gone
  a.add_event(make_event(1000, 1200));  // on the mark: step 0 as well, so too late too
  a.add_event(make_event(1001, 1200));  // next step: fine
  EXPECT_EQ(a.discarded(), 2u);
  a.add_mark({1, 2000});
  a.close_ready(5000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(c.steps[1].ops.size(), 1u);
}

TEST(StepCutter, TaggedEventsFollowTheirStepNotTheirTime) {
  StepCutter a({}, 0);
  Collector c;
  a.add_event(tagged(1500, 1600, 0));  // GPU work of step 0 running after step 0's mark
  a.add_mark({0, 1000});
  a.add_event(tagged(1700, 1800, 0));  // pending step: joins it directly
  a.add_event(tagged(1900, 2000, 1));  // waits for mark 1
  a.add_mark({1, 3000});
  a.close_ready(10000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(starts(c.steps[0]), (std::vector<uint64_t>{1500, 1700}));
  EXPECT_EQ(starts(c.steps[1]), (std::vector<uint64_t>{1900}));
  for (const auto& s : c.steps) {
    for (const auto& op : s.ops) EXPECT_EQ(op.step_plus_one, 0u);  // resolved in the summary
  }
  a.add_event(tagged(5000, 5001, 1));  // step 1 already closed
  EXPECT_EQ(a.discarded(), 1u);
}

TEST(StepCutter, TaggedEventsForAStepThatNeverComesAreDiscardedOnceItIsPassed) {
  StepCutter a({}, 0);
  Collector c;
  a.add_event(tagged(100, 200, 5));
  a.add_mark({6, 1000});
  a.close_ready(10000, 0, false, c.emit());
  EXPECT_EQ(a.discarded(), 1u);
  EXPECT_TRUE(c.steps[0].ops.empty());
}

TEST(StepCutter, PerStepCapDropsAndCounts) {
  StepCutter::Limits limits;
  limits.max_events_per_step = 3;
  StepCutter a(limits, 0);
  Collector c;
  for (uint64_t i = 0; i < 5; ++i) a.add_event(make_event(10 + i, 20 + i));
  a.add_mark({0, 1000});
  a.close_ready(2000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_EQ(c.steps[0].ops.size(), 3u);
  EXPECT_EQ(c.steps[0].dropped_events, 2u);
  EXPECT_EQ(a.discarded(), 2u);
}

TEST(StepCutter, TooManyPendingStepsCloseEarly) {
  StepCutter::Limits limits;
  limits.max_pending_steps = 2;
  StepCutter a(limits, 0);
  Collector c;
  for (int64_t s = 0; s < 5; ++s) a.add_mark({s, static_cast<uint64_t>(1000 * (s + 1))});
  a.close_ready(0, /*grace=*/1000000, false, c.emit());
  EXPECT_EQ(c.steps.size(), 3u);
  EXPECT_EQ(a.pending_steps(), 2u);
}

TEST(StepCutter, TooManyPendingEventsCloseTheOldestStepsEarly) {
  StepCutter::Limits limits;
  limits.max_events_per_step = 4;  // so at most 16 events wait in all
  StepCutter a(limits, 0);
  Collector c;
  for (int64_t s = 0; s < 5; ++s) {
    const uint64_t base = static_cast<uint64_t>(1000 * s);
    for (uint64_t i = 1; i <= 4; ++i) a.add_event(make_event(base + i, base + i + 1));
    a.add_mark({s, base + 999});
  }
  a.close_ready(0, /*grace=*/1000000, false, c.emit());
  ASSERT_EQ(c.steps.size(), 1u);  // 20 pending > 16: the oldest step goes early, complete
  EXPECT_EQ(c.steps[0].step, 0);
  EXPECT_EQ(c.steps[0].ops.size(), 4u);
  EXPECT_EQ(a.pending_steps(), 4u);
  EXPECT_EQ(a.discarded(), 0u);
}

TEST(StepCutter, RingDropsAndAnnotationsLandInTheStepTheyHappenedIn) {
  StepCutter a({}, 0);
  Collector c;
  a.add_ring_drops(4);
  a.add_annotation(500, {0, "seq_lens", "512,1024"});
  a.add_mark({0, 1000});
  a.add_annotation(1500, {1, "seq_lens", "64"});
  a.add_ring_drops(1);
  a.add_mark({1, 2000});
  a.close_ready(3000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(c.steps[0].dropped_events, 4u);
  ASSERT_EQ(c.steps[0].annotations.size(), 1u);
  EXPECT_EQ(c.steps[0].annotations[0].value, "512,1024");
  EXPECT_EQ(c.steps[1].dropped_events, 1u);
  ASSERT_EQ(c.steps[1].annotations.size(), 1u);
  EXPECT_EQ(c.steps[1].annotations[0].microbatch, 1);
}

TEST(StepCutter, MarkThatGoesBackInTimeIsClampedToThePreviousOne) {
  StepCutter a({}, 0);
  Collector c;
  a.add_mark({0, 2000});
  a.add_mark({1, 1500});  // wall clock stepped back
  a.close_ready(5000, 0, false, c.emit());
  ASSERT_EQ(c.steps.size(), 2u);
  EXPECT_EQ(c.steps[1].step_start_ns, 2000u);
  EXPECT_EQ(c.steps[1].step_end_ns, 2000u);
}

TEST(StepCutter, DiscardOpenCountsTheUnfinishedStep) {
  StepCutter a({}, 0);
  a.add_event(make_event(10, 20));
  a.add_event(tagged(10, 20, 3));
  a.discard_open();
  EXPECT_EQ(a.discarded(), 2u);
}

}  // namespace
}  // namespace sp::runtime
