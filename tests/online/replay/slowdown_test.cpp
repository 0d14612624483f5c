// S against the measured slowdown on synthetic jobs without jitter, where the measurement is
// exact: the step time with a planted straggler over the step time of the same job clean (for
// a heavier stage: of the same job with the work spread evenly over the stages, which is what
// the ideal re-balances to). Data parallel, GPipe and 1F1B, with a slow rank on each stage.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "straggler_probe/online/analyzer.h"
#include "analyze_run.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::mean;
using testing::run_synthetic;
using testing::Schedule;
using testing::SyntheticJob;
using testing::SyntheticRun;

constexpr int kSteps = 12;
constexpr size_t kWarmup = 2;
constexpr double kTolerance = 0.03;  // the bar: S within 3% of the measured slowdown

std::vector<StepVerdict> analyze(const SyntheticRun& run) {
  OnlineConfig cfg;
  cfg.timeline_steps = 0;
  return testing::analyze_run(run, cfg);
}

double mean_S(const std::vector<StepVerdict>& vs) {
  double sum = 0;
  for (size_t i = kWarmup; i < vs.size(); ++i) {
    EXPECT_TRUE(vs[i].analyzed) << vs[i].skip_reason;
    EXPECT_GE(vs[i].S, 1.0 - 1e-9) << "step " << vs[i].step << " ideal " << vs[i].ideal_s
                                    << " > real " << vs[i].time_s;
    sum += vs[i].S;
  }
  return sum / static_cast<double>(vs.size() - kWarmup);
}

SyntheticJob job(int dp, int pp, int microbatches, Schedule schedule) {
  SyntheticJob j;
  j.dp = dp;
  j.pp = pp;
  j.microbatches = microbatches;
  j.schedule = schedule;
  return j;
}

// One rank `factor` slower: S against slow / clean step time, and the rank named a worker.
void expect_slow_rank_matches(SyntheticJob j, int rank, double factor) {
  const SyntheticRun clean = run_synthetic(j, kSteps);
  j.rank_speed.assign(static_cast<size_t>(j.dp * j.pp), 1.0);
  j.rank_speed[static_cast<size_t>(rank)] = factor;
  const SyntheticRun slow = run_synthetic(j, kSteps);
  const double measured = mean(slow.step_time_s, kWarmup) / mean(clean.step_time_s, kWarmup);
  const auto verdicts = analyze(slow);
  const double S = mean_S(verdicts);
  EXPECT_NEAR(S / measured, 1.0, kTolerance) << "rank " << rank << ": S=" << S << " measured=" << measured;
  EXPECT_EQ(verdicts.back().cause, Cause::kWorker) << verdicts.back().evidence;
  EXPECT_EQ(verdicts.back().worst, "rank:" + std::to_string(rank));
  EXPECT_NEAR(mean_S(analyze(clean)), 1.0, 0.005);
}

TEST(OnlineSlowdown, DataParallelSlowRank) {
  expect_slow_rank_matches(job(8, 1, 2, Schedule::kGPipe), 5, 1.3);
}

// The job: 4-stage GPipe, dp 16, 8 micro-batches, one rank 30% slower. S averaged
// 1.115 against a measured 1.156 when the ideal started from the recorded step starts, which
// carry the previous step's straggling (the slow rank's stage starts late).
TEST(OnlineSlowdown, GPipeSlowRankOnEveryStage) {
  const SyntheticJob j = job(16, 4, 8, Schedule::kGPipe);
  for (int rank : {0, 21, 40, 63}) expect_slow_rank_matches(j, rank, 1.3);
}

TEST(OnlineSlowdown, OneFOneBSlowRankOnEveryStage) {
  const SyntheticJob j = job(4, 4, 8, Schedule::k1F1B);
  for (int rank : {1, 6, 11, 12}) expect_slow_rank_matches(j, rank, 1.3);
}

// Two dp ranks per stage (pp x dp on 4 ranks): too few for a spread; the faster one of a pair
// stands for the stage's work in the ideal.
TEST(OnlineSlowdown, TwoDpRanksPerStage) {
  for (Schedule s : {Schedule::kGPipe, Schedule::k1F1B}) {
    const SyntheticJob j = job(2, 2, 4, s);
    for (int rank : {0, 3}) expect_slow_rank_matches(j, rank, 1.3);
  }
}

// A last stage 45% heavier: S against the same job with the work spread evenly, the stage named,
// and the evidence's share one a fix can recover (the fix-only share exceeds 1 here, see
// cause_rules.cpp), the stage's S_w the part of S that fixing it recovers.
TEST(OnlineSlowdown, HeavierLastStageAgainstTheBalancedJob) {
  for (Schedule s : {Schedule::kGPipe, Schedule::k1F1B}) {
    for (int dp : {1, 2}) {
      SyntheticJob j = job(dp, 4, 8, s);
      const double factor = 1.45;
      j.stage_speed = {1.0, 1.0, 1.0, factor};
      const SyntheticRun heavy = run_synthetic(j, kSteps);
      j.stage_speed.assign(4, (3.0 + factor) / 4.0);
      const SyntheticRun balanced = run_synthetic(j, kSteps);
      const double measured = mean(heavy.step_time_s, kWarmup) / mean(balanced.step_time_s, kWarmup);
      const auto verdicts = analyze(heavy);
      EXPECT_NEAR(mean_S(verdicts) / measured, 1.0, kTolerance) << "dp " << dp;
      for (size_t i = kWarmup; i < verdicts.size(); ++i) {
        const StepVerdict& v = verdicts[i];
        EXPECT_EQ(v.cause, Cause::kStageImbalance) << v.evidence;
        EXPECT_EQ(v.worst, "stage:3");
        EXPECT_LE(v.worst_S, v.S + 1e-12);
        EXPECT_GT(v.M_S, 1.0);  // the paper's number, kept as it is defined
        EXPECT_NE(v.evidence.find("recovers all of the slowdown"), std::string::npos) << v.evidence;
        std::smatch pct;
        if (std::regex_search(v.evidence, pct, std::regex("recovers ([0-9]+)%"))) {
          EXPECT_LE(std::stoi(pct[1]), 100) << v.evidence;
        }
      }
    }
  }
}

TEST(OnlineSlowdown, CleanPipelinesAreStragglerFree) {
  for (Schedule s : {Schedule::kGPipe, Schedule::k1F1B}) {
    const auto verdicts = analyze(run_synthetic(job(2, 4, 8, s), kSteps));
    EXPECT_NEAR(mean_S(verdicts), 1.0, 0.005);
    EXPECT_EQ(verdicts.back().cause, Cause::kNone) << verdicts.back().evidence;
  }
}

}  // namespace
}  // namespace sp::online
