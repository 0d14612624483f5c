// The hang cause (online/src/decision/hang_rule.h) on synthetic jobs: a rank frozen for 20 s inside one
// of its ops is named `hang` on that step, from the step's own events; a freeze inside the
// all-reduce (after every member entered it) is a hang that names no rank; a pipeline rank's
// stop is not blamed on the stages that waited for it; a step slower on every rank names no
// rank. And nothing is learned from a hang step: the steps after it have the ideals of a twin
// job without the freeze, and name no one more often than the significance level allows.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/probe.h"
#include "analyze_run.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::run_synthetic;
using testing::SyntheticJob;

constexpr int64_t kFreezeStep = 30;
constexpr double kFreezeS = 20.0;
constexpr int kAfter = 200;  // clean steps after the freeze
constexpr int kSteps = static_cast<int>(kFreezeStep) + 1 + kAfter;

// The job of the tests: 4 dp ranks, 3% jitter on compute (the noise model learns it).
SyntheticJob job_of(uint32_t kind, int rank, int index = 0) {
  SyntheticJob job;
  job.jitter = 0.03;
  job.seed = 7;
  if (kind != 0) {
    job.duration_hook = [kind, rank, index](const testing::DurationSite& s, double d) {
      const bool frozen = s.kind == kind && s.step == kFreezeStep && s.rank == rank && s.index == index;
      return frozen ? d + kFreezeS : d;
    };
  }
  return job;
}

// The most steps out of n a test at level alpha may name when none is special, with the check's
// own false-alarm rate held to alpha too: the smallest k with P(Bin(n, alpha) > k) < alpha.
int allowed_named(int n, double alpha) {
  double term = std::pow(1.0 - alpha, n), cdf = term;
  int k = 0;
  while (1.0 - cdf >= alpha) {
    term *= (n - k) / (k + 1.0) * alpha / (1.0 - alpha);
    cdf += term;
    ++k;
  }
  return k;
}

const StepVerdict& at(const std::vector<StepVerdict>& v, int64_t step) {
  return v.at(static_cast<size_t>(step));
}

// After the freeze: the twin's ideals (nothing learned from the stop), and no more named steps
// than the level allows.
void expect_clean_after(const std::vector<StepVerdict>& frozen, const std::vector<StepVerdict>& twin) {
  int named = 0;
  for (int64_t s = kFreezeStep + 1; s < kSteps; ++s) {
    const StepVerdict& v = at(frozen, s);
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    named += v.cause != Cause::kNone;
    EXPECT_NEAR(v.ideal_s / at(twin, s).ideal_s, 1.0, 0.02) << "step " << s;
  }
  EXPECT_LE(named, allowed_named(kAfter, OnlineConfig{}.noise.alpha));
}

TEST(OnlineHang, ARankFrozenInForwardIsNamedAndNothingIsLearnedFromItsStep) {
  const auto twin = testing::analyze_run(run_synthetic(job_of(0, 0), kSteps));
  const auto frozen = testing::analyze_run(run_synthetic(job_of(SP_OP_FORWARD, 2), kSteps));
  const StepVerdict& v = at(frozen, kFreezeStep);
  EXPECT_EQ(v.cause, Cause::kHang) << v.evidence;
  EXPECT_EQ(v.worst, "rank:2");
  EXPECT_EQ(v.top_op, "forward-compute");
  EXPECT_NE(v.evidence.find("rank 2 stopped for 20.0"), std::string::npos) << v.evidence;
  EXPECT_NE(v.evidence.find("entered all-reduce 20.0"), std::string::npos) << v.evidence;
  EXPECT_GT(v.S, 100.0);
  for (int64_t s = 0; s < kSteps; ++s) {
    if (s != kFreezeStep) {
      EXPECT_NE(at(frozen, s).cause, Cause::kHang) << "step " << s;
    }
  }
  expect_clean_after(frozen, twin);
}

TEST(OnlineHang, AStopInsideTheAllReduceIsAHangTheEventsCannotPinOnARank) {
  const auto twin = testing::analyze_run(run_synthetic(job_of(0, 0), kSteps));
  // bucket 0's transfer, every member waiting in it (its group's first rank is rank 0)
  const auto frozen = testing::analyze_run(run_synthetic(job_of(SP_OP_COLLECTIVE, 0), kSteps));
  const StepVerdict& v = at(frozen, kFreezeStep);
  EXPECT_EQ(v.cause, Cause::kHang) << v.evidence;
  EXPECT_EQ(v.worst, "");
  EXPECT_NE(v.evidence.find("every rank waited 20.0"), std::string::npos) << v.evidence;
  expect_clean_after(frozen, twin);
}

TEST(OnlineHang, TheHangWatchsSilentRankNamesAStopTheEventsCannotPin) {
  // Live, rank 0's hang watch says which rank's heartbeat stopped (its latest episode); each
  // episode is taken by one hang step, and a rank the events name is not overridden.
  OnlineConfig cfg;
  OnlineConfig::SilentRanks watch{1, {3}};
  cfg.silent_ranks = [&watch] { return watch; };
  const auto inside = testing::analyze_run(run_synthetic(job_of(SP_OP_COLLECTIVE, 0), static_cast<int>(kFreezeStep) + 3), cfg);
  EXPECT_EQ(at(inside, kFreezeStep).cause, Cause::kHang);
  EXPECT_EQ(at(inside, kFreezeStep).worst, "rank:3");
  EXPECT_NE(at(inside, kFreezeStep).evidence.find("the hang watch found rank 3 silent"), std::string::npos);
  watch = {1, {2}};  // an episode already taken: not this stop's
  cfg.silent_ranks = [&watch] { return watch; };
  cfg.world_size = 4;
  OnlineAnalyzer taken_once(cfg);  // the same analyzer sees two stops, one episode
  SyntheticJob twice = job_of(0, 0);
  twice.duration_hook = [](const testing::DurationSite& s, double d) {
    const bool frozen = s.kind == SP_OP_COLLECTIVE && (s.step == 10 || s.step == 20) && s.rank == 0 && s.index == 0;
    return frozen ? d + kFreezeS : d;
  };
  std::vector<StepVerdict> out;
  for (const auto& step : run_synthetic(twice, 22).steps) {
    for (const auto& summary : step) {
      for (StepVerdict& v : taken_once.add(summary)) out.push_back(std::move(v));
    }
  }
  for (StepVerdict& v : taken_once.finish()) out.push_back(std::move(v));
  ASSERT_GE(out.size(), 21u);
  EXPECT_EQ(at(out, 10).worst, "rank:2");
  EXPECT_EQ(at(out, 20).cause, Cause::kHang);
  EXPECT_EQ(at(out, 20).worst, "");
  watch = {2, {0}};  // the events name rank 2: the watch does not override them
  const auto forward = testing::analyze_run(run_synthetic(job_of(SP_OP_FORWARD, 2), static_cast<int>(kFreezeStep) + 3), cfg);
  EXPECT_EQ(at(forward, kFreezeStep).worst, "rank:2");
}

TEST(OnlineHang, APipelineRankFrozenIsNamedNotTheStagesThatWaitedForIt) {
  SyntheticJob job = job_of(SP_OP_FORWARD, 1, 1);  // stage 0's dp rank 1, micro-batch 1
  job.dp = 2;
  job.pp = 2;
  job.microbatches = 4;
  const auto verdicts = testing::analyze_run(run_synthetic(job, static_cast<int>(kFreezeStep) + 5));
  const StepVerdict& v = at(verdicts, kFreezeStep);
  EXPECT_EQ(v.cause, Cause::kHang) << v.evidence;
  EXPECT_EQ(v.worst, "rank:1") << v.evidence;
}

TEST(OnlineHang, AStepSlowOnEveryRankNamesNoRankAndTheBoundIsTheJobs) {
  SyntheticJob job = job_of(0, 0);
  job.step_speed = {{kFreezeStep, 30.0}};  // every rank's compute 30x: over 20 x the typical step
  OnlineConfig cfg;
  cfg.hang_after_s = 1.0;  // the floor under 20 x the ~0.07 s step
  const auto verdicts = testing::analyze_run(run_synthetic(job, static_cast<int>(kFreezeStep) + 5), cfg);
  const StepVerdict& v = at(verdicts, kFreezeStep);
  EXPECT_EQ(v.cause, Cause::kHang) << v.evidence;
  EXPECT_EQ(v.worst, "") << v.evidence;
  cfg.hang_after_s = 0;  // off: the noise model's causes as before
  EXPECT_NE(at(testing::analyze_run(run_synthetic(job, static_cast<int>(kFreezeStep) + 5), cfg), kFreezeStep).cause,
            Cause::kHang);
  cfg.hang_after_s = 10;  // 30 x 0.07 s = 2.1 s, under the default floor
  EXPECT_NE(at(testing::analyze_run(run_synthetic(job, static_cast<int>(kFreezeStep) + 5), cfg), kFreezeStep).cause,
            Cause::kHang);
}

TEST(OnlineHang, TheAllowedShareIsTheLevelsBinomialBound) {
  // P(Bin(200, 1e-3) > 2) = 1.1e-3, > 3: 5.5e-5; tests/python/test_hang.py uses the same bound
  EXPECT_EQ(allowed_named(200, 1e-3), 3);
  EXPECT_EQ(allowed_named(200, 1e-2), 6);
}

// The bound before 3 steps are known (step_analysis.cpp, the hang watch's hang_bound_of): with
// none, 3 x hang_after_s, so that a job of 12 s steps does not call its first analysed step a
// hang (the bound was hang_after_s, 10 s); with one, the largest known step's multiple, no
// lower than hang_after_s, so that a fast job frozen on its second analysed step is one.
TEST(OnlineHang, BeforeThreeStepsAreKnownTheBoundComesFromTheStepsSeen) {
  SyntheticJob slow;
  slow.forward_s = 4.0;
  slow.backward_s = 8.0;
  const auto verdicts = testing::analyze_run(run_synthetic(slow, 3));
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_GT(verdicts[0].time_s, 12.0);
  for (const StepVerdict& v : verdicts) EXPECT_NE(v.cause, Cause::kHang) << v.step << " " << v.evidence;

  SyntheticJob fast;
  fast.duration_hook = [](const testing::DurationSite& s, double d) {
    return s.kind == SP_OP_FORWARD && s.step == 1 && s.rank == 2 && s.index == 0 ? d + 15.0 : d;
  };
  const auto frozen = testing::analyze_run(run_synthetic(fast, 3));
  ASSERT_EQ(frozen.size(), 3u);
  EXPECT_EQ(frozen[1].cause, Cause::kHang) << frozen[1].evidence;
  EXPECT_EQ(frozen[1].worst, "rank:2");
  EXPECT_NE(frozen[1].evidence.find("over the hang bound of 10.0 s"), std::string::npos) << frozen[1].evidence;
}

}  // namespace
}  // namespace sp::online
