// StepAssembler, the one owner of "this step is complete / given up": every rule that closes a
// step, the order steps close in, and what happens to summaries that come too late or twice.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "straggler_probe/online/step_assembly.h"

namespace sp::online {
namespace {

using Assembler = StepAssembler<std::string>;
using Clock = Assembler::Clock;

AssemblyLimits limits(int world, int lag = 4, int max_pending = 16, int timeout_ms = 0) {
  return AssemblyLimits{world, lag, max_pending, std::chrono::milliseconds(timeout_ms)};
}

void put_all(Assembler& a, int64_t step, int world, int except = -1) {
  for (int r = 0; r < world; ++r) {
    if (r == except) continue;
    EXPECT_EQ(a.put(step, r, std::to_string(step * 100 + r)), Arrival::kAccepted);
  }
}

std::vector<int64_t> steps_of(const std::vector<Assembler::Closed>& closed) {
  std::vector<int64_t> out;
  for (const auto& c : closed) out.push_back(c.step);
  return out;
}

TEST(StepAssembly, ACompleteStepClosesWithEveryRanksPayloadInRankOrder) {
  Assembler a(limits(3));
  a.put(7, 2, "c");
  a.put(7, 0, "a");
  EXPECT_TRUE(a.take_ready().empty());
  a.put(7, 1, "b");
  const auto closed = a.take_ready();
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_TRUE(closed[0].complete);
  EXPECT_EQ(closed[0].step, 7);
  ASSERT_EQ(closed[0].by_rank.size(), 3u);
  EXPECT_EQ(*closed[0].by_rank[0], "a");
  EXPECT_EQ(*closed[0].by_rank[2], "c");
  EXPECT_TRUE(closed[0].missing.empty());
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.last_closed(), 7);
}

TEST(StepAssembly, StepsCloseInStepOrderALaterCompleteStepWaitsForAnOlderOne) {
  Assembler a(limits(2));
  a.put(1, 0, "x");  // step 1 lacks rank 1 for now
  put_all(a, 2, 2);
  EXPECT_TRUE(a.take_ready().empty());  // 2 is complete but 1 is older and still possible
  a.put(1, 1, "y");
  EXPECT_EQ(steps_of(a.take_ready()), (std::vector<int64_t>{1, 2}));
}

TEST(StepAssembly, GivenUpWhenEveryMissingRankMovedPastIt) {
  Assembler a(limits(4));
  put_all(a, 5, 4, /*except=*/3);
  a.rank_moved_to(3, 5);  // rank 3 may still send step 5
  EXPECT_TRUE(a.take_ready().empty());
  a.rank_moved_to(3, 6);  // it sent a later step: it skipped 5
  const auto closed = a.take_ready();
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_FALSE(closed[0].complete);
  EXPECT_EQ(closed[0].missing, std::vector<int>{3});
  EXPECT_EQ(closed[0].why_incomplete, "no summary from rank(s) 3 (those ranks skipped it)");
}

TEST(StepAssembly, GivenUpOnceAStepLagStepsLaterIsComplete) {
  Assembler a(limits(2, /*lag=*/3));
  a.put(0, 0, "x");
  put_all(a, 1, 2);
  put_all(a, 2, 2);
  EXPECT_TRUE(a.take_ready().empty());
  put_all(a, 3, 2);
  const auto closed = a.take_ready();
  EXPECT_EQ(steps_of(closed), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(closed[0].why_incomplete, "no summary from rank(s) 1 by step 3");
  EXPECT_TRUE(closed[1].complete && closed[3].complete);
}

TEST(StepAssembly, MemoryIsBoundedByMaxPendingTheOldestIsGivenUp) {
  Assembler a(limits(2, /*lag=*/100, /*max_pending=*/3));
  for (int64_t s = 0; s < 10; ++s) a.put(s, 0, "x");  // rank 1 silent
  const auto closed = a.take_ready();
  EXPECT_EQ(a.pending(), 3u);
  ASSERT_EQ(closed.size(), 7u);
  EXPECT_EQ(closed.front().why_incomplete, "no summary from rank(s) 1 (more than 3 steps pending)");
}

TEST(StepAssembly, GivenUpAfterTheTimeoutSinceItsFirstSummary) {
  Assembler a(limits(2, 4, 16, /*timeout_ms=*/2500));
  const Clock::time_point t0 = Clock::now();
  a.put(4, 1, "x", t0);
  EXPECT_TRUE(a.take_ready(t0 + std::chrono::milliseconds(2500)).empty());
  const auto closed = a.take_ready(t0 + std::chrono::milliseconds(2501));
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].why_incomplete, "no summary from rank(s) 0 within 2.5 s");
}

TEST(StepAssembly, TheEndOfTheRunClosesEverythingCompleteOnesStayComplete) {
  Assembler a(limits(2));
  a.put(1, 0, "x");
  put_all(a, 2, 2);
  const auto closed = a.take_all();
  ASSERT_EQ(closed.size(), 2u);
  EXPECT_EQ(closed[0].why_incomplete, "no summary from rank(s) 1 at the end of the run");
  EXPECT_TRUE(closed[1].complete);
  EXPECT_TRUE(closed[1].why_incomplete.empty());
}

TEST(StepAssembly, LateDuplicateAndForeignSummariesAreNamedNotStored) {
  Assembler a(limits(2));
  put_all(a, 3, 2);
  (void)a.take_ready();
  EXPECT_TRUE(a.is_late(3));
  EXPECT_TRUE(a.is_late(1));  // before a closed step: it can no longer be analysed in order
  EXPECT_EQ(a.put(3, 0, "again"), Arrival::kLate);
  EXPECT_EQ(a.put(2, 0, "old"), Arrival::kLate);
  EXPECT_EQ(a.put(4, 2, "who"), Arrival::kBadRank);
  EXPECT_EQ(a.put(4, -1, "who"), Arrival::kBadRank);
  EXPECT_EQ(a.put(4, 0, "a"), Arrival::kAccepted);
  EXPECT_EQ(a.put(4, 0, "b"), Arrival::kDuplicate);
  EXPECT_EQ(a.pending(), 1u);
}

TEST(StepAssembly, AProblemNotedForAStepTravelsWithItAndTheFirstOneWins) {
  Assembler a(limits(2));
  a.put(0, 0, "x");
  a.note_problem(0, "summary from rank 9 in a world of 2");
  a.note_problem(0, "second");
  const auto closed = a.take_all();
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].problem, "summary from rank 9 in a world of 2");
}

TEST(StepAssembly, ManyMissingRanksAreListedShortly) {
  Assembler a(limits(20));
  a.put(0, 5, "x");
  const auto closed = a.take_all();
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].missing.size(), 19u);
  EXPECT_EQ(closed[0].why_incomplete, "no summary from rank(s) 0,1,2,3,4,6,7,8,... (19 ranks) at the end of the run");
}

// The rules on their own, as the host-aggregated collector asks them (it holds no payloads):
// checked in one order, the first that holds gives the reason; none: wait.
TEST(StepAssembly, GiveUpReasonChecksTheRulesInOrder) {
  AssemblyLimits rules;
  rules.world_size = 4;
  rules.incomplete_lag_steps = 3;
  rules.max_pending_steps = 5;
  rules.step_timeout = std::chrono::milliseconds(2500);
  OpenStep s;
  s.step = 10;
  EXPECT_FALSE(give_up_reason(rules, s).has_value());
  s.waited = std::chrono::milliseconds(2600);
  EXPECT_EQ(give_up_reason(rules, s), " within 2.5 s");
  s.pending_steps = 6;
  EXPECT_EQ(give_up_reason(rules, s), " (more than 5 steps pending)");
  s.newest_complete = 12;  // 2 steps later: not yet the lag
  EXPECT_EQ(give_up_reason(rules, s), " (more than 5 steps pending)");
  s.newest_complete = 13;
  EXPECT_EQ(give_up_reason(rules, s), " by step 13");
  s.missing_moved_past = true;
  EXPECT_EQ(give_up_reason(rules, s), " (those ranks skipped it)");
  EXPECT_EQ(why_incomplete({1, 3}, " by step 13"), "no summary from rank(s) 1,3 by step 13");
  EXPECT_EQ(why_incomplete({2}, "at the end of the run"), "no summary from rank(s) 2 at the end of the run");
}

}  // namespace
}  // namespace sp::online
