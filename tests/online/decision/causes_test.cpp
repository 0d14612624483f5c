// End-to-end on synthetic jobs: the scenarios (clean, one slow rank, GC pauses,
// long-tailed sequence lengths, a heavier last stage) and the replay's fidelity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "straggler_probe/online/analyzer.h"
#include "analyze_run.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::mean;
using testing::run_synthetic;
using testing::SyntheticJob;
using testing::SyntheticRun;

std::vector<StepVerdict> analyze(const SyntheticRun& run, OnlineConfig cfg = {}) {
  return testing::analyze_run(run, std::move(cfg));
}

constexpr int kSteps = 30;
constexpr int kWarmup = 3;

TEST(OnlineCauses, CleanRunNamesNobody) {
  SyntheticJob job;
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  ASSERT_EQ(verdicts.size(), static_cast<size_t>(kSteps));
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    EXPECT_LE(v.S, 1.05) << "step " << v.step;
    EXPECT_EQ(v.cause, Cause::kNone) << "step " << v.step << ": " << v.evidence;
    EXPECT_TRUE(v.worst.empty());
  }
}

TEST(OnlineCauses, SlowRankIsNamedAndSMatchesTheMeasuredSlowdown) {
  SyntheticJob job;
  job.jitter = 0.01;
  job.microbatches = 2;
  const SyntheticRun clean = run_synthetic(job, kSteps);
  job.rank_speed = {1.0, 1.0, 1.0, 1.3};
  const SyntheticRun slow = run_synthetic(job, kSteps);
  const double measured = mean(slow.step_time_s, kWarmup) / mean(clean.step_time_s, kWarmup);
  const auto verdicts = analyze(slow);
  int named = 0;
  std::vector<double> S;
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    named += v.cause == Cause::kWorker && v.worst == "rank:3";
    S.push_back(v.S);
  }
  const int n = kSteps - kWarmup;
  EXPECT_GE(named, static_cast<int>(std::ceil(0.9 * n))) << verdicts.back().evidence;
  EXPECT_NEAR(mean(S) / measured, 1.0, 0.05) << "S=" << mean(S) << " measured=" << measured;
  EXPECT_GE(verdicts.back().M_W, 0.5);
}

TEST(OnlineCauses, GcPausesAreNamedOnTheirSteps) {
  SyntheticJob job;
  job.jitter = 0.005;
  job.gc = {{6, 2, 0.05}, {12, 2, 0.05}, {18, 1, 0.08}};
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    if (v.step == 6 || v.step == 12 || v.step == 18) {
      EXPECT_EQ(v.cause, Cause::kGc) << "step " << v.step << ": " << v.evidence;
      EXPECT_EQ(v.worst, v.step == 18 ? "rank:1" : "rank:2");
      EXPECT_EQ(v.top_op, "gc");
    } else {
      EXPECT_EQ(v.cause, Cause::kNone) << "step " << v.step << ": " << v.evidence;
    }
  }
}

// A slow link: on the given steps every rank's last bucket all-reduce transfers `extra_s`
// longer (what ends at or after its end on each rank, the rest of backward, the optimizer and
// the step mark, moves by as much).
void slow_last_bucket(SyntheticRun* run, const std::vector<int64_t>& steps, double extra_s) {
  const auto extra = static_cast<uint64_t>(extra_s * 1e9);
  for (int64_t step : steps) {
    for (runtime::StepSummary& s : run->steps.at(static_cast<size_t>(step))) {
      uint64_t last_end = 0;
      for (const sp_event& e : s.ops) {
        if (e.kind == SP_OP_COLLECTIVE) last_end = std::max(last_end, e.end_ns);
      }
      ASSERT_GT(last_end, 0u);
      auto shift = [&](uint64_t& t) { t += t >= last_end ? extra : 0; };
      for (sp_event& e : s.ops) {
        shift(e.start_ns);
        shift(e.end_ns);
      }
      shift(s.step_end_ns);
    }
  }
}

TEST(OnlineCauses, SlowTransfersAreComm) {
  SyntheticJob job;
  job.jitter = 0.005;
  SyntheticRun run = run_synthetic(job, kSteps);
  slow_last_bucket(&run, {8, 16, 24}, 0.03);
  const auto verdicts = analyze(run);
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    if (v.step == 8 || v.step == 16 || v.step == 24) {
      EXPECT_EQ(v.cause, Cause::kComm) << "step " << v.step << ": " << v.evidence;
      EXPECT_EQ(v.top_op, "all-reduce");
      EXPECT_GT(v.S, 1.2);
    } else {
      EXPECT_EQ(v.cause, Cause::kNone) << "step " << v.step << ": " << v.evidence;
    }
  }
}

TEST(OnlineCauses, ASlowdownSharedByEveryRankIsNotStraggling) {
  SyntheticJob job;
  job.jitter = 0.01;
  job.step_speed = {{10, 1.3}, {11, 1.3}, {12, 1.5}, {20, 0.8}};
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    EXPECT_EQ(verdicts[i].cause, Cause::kNone) << "step " << verdicts[i].step << ": " << verdicts[i].evidence;
    EXPECT_LE(verdicts[i].S, 1.05);
  }
  OnlineConfig fixed;  // with the paper's fixed ideal the same steps look slow
  fixed.ideal.follow_step_level = false;
  const auto paper = analyze(run_synthetic(job, kSteps), fixed);
  EXPECT_GT(paper[12].S, 1.2);
}

// Share of the straggling steps (S >= 1.05, after `from`) whose cause is `c`.
double share_of(const std::vector<StepVerdict>& vs, Cause c, size_t from, int* straggling) {
  int n = 0, hit = 0;
  for (size_t i = from; i < vs.size(); ++i) {
    if (!vs[i].analyzed || vs[i].S < 1.05) continue;
    ++n;
    hit += vs[i].cause == c;
  }
  *straggling = n;
  return n ? static_cast<double>(hit) / n : 0.0;
}

TEST(OnlineCauses, LongTailedSequenceLengthsAreSeqImbalance) {
  SyntheticJob job;
  job.seq_lens = true;
  job.microbatches = 2;
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  int straggling = 0;
  const double share = share_of(verdicts, Cause::kSeqImbalance, kWarmup, &straggling);
  EXPECT_GE(straggling, kSteps / 2);
  EXPECT_GE(share, 0.9) << verdicts.back().evidence;
  EXPECT_GE(verdicts.back().seq_corr, 0.9);
}

TEST(OnlineCauses, WithoutAnnotationsForwardBackwardCorrelationStillSaysSeqImbalance) {
  SyntheticJob job;
  job.seq_lens = true;
  job.annotate = false;
  job.microbatches = 2;
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  // Without annotations the noise model cannot tell the varying work from jitter (it learns
  // its jitter from the same durations), so the step is named only when it is slow beyond
  // that jitter; when it is, the cause is seq-imbalance, never a worker. With the paper's
  // fixed threshold (noise model off, none_below 1.05) the rule itself still says it.
  for (size_t i = 10; i < verdicts.size(); ++i) {
    const Cause c = verdicts[i].cause;
    EXPECT_TRUE(c == Cause::kNone || c == Cause::kSeqImbalance) << verdicts[i].evidence;
  }
  EXPECT_GE(verdicts.back().fb_corr, 0.9);
  OnlineConfig fixed;
  fixed.noise.enabled = false;
  fixed.thresholds.none_below = 1.05;
  const auto by_rule = analyze(run_synthetic(job, kSteps), fixed);
  int straggling = 0;
  const double share = share_of(by_rule, Cause::kSeqImbalance, 10, &straggling);
  EXPECT_GE(straggling, 10);
  EXPECT_GE(share, 0.7) << by_rule.back().evidence;
}

TEST(OnlineCauses, HeavierLastStageIsStageImbalance) {
  SyntheticJob job;
  job.dp = 2;
  job.pp = 2;
  job.microbatches = 4;
  job.stage_speed = {1.0, 1.6};
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  int hits = 0;
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    ASSERT_TRUE(v.analyzed) << v.skip_reason;
    EXPECT_GE(v.M_S, 0.5) << "step " << v.step;
    hits += v.cause == Cause::kStageImbalance && v.worst == "stage:1";
  }
  EXPECT_GE(hits, static_cast<int>(std::ceil(0.9 * (kSteps - kWarmup)))) << verdicts.back().evidence;
  EXPECT_GT(verdicts.back().S, 1.1);
}

TEST(OnlineCauses, SlowRankInAPipelineIsAWorkerNotAStage) {
  SyntheticJob job;
  job.dp = 4;
  job.pp = 2;
  job.microbatches = 4;
  job.rank_speed = {1, 1, 1, 1, 1, 1.4, 1, 1};  // stage 1, dp rank 1
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  int hits = 0;
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    hits += verdicts[i].cause == Cause::kWorker && verdicts[i].worst == "rank:5";
  }
  EXPECT_GE(hits, static_cast<int>(std::ceil(0.9 * (kSteps - kWarmup)))) << verdicts.back().evidence;
}

// torchtitan's 2 stages x 2 dp ranks on a crowded host: the slow rank 2's row-mate (rank 3)
// shares its dp column with a rank of the other stage that runs slow too (rank 1), so rank 3's
// S_w (min of its column's score and its stage's) is high although rank 3 itself is not slow.
// The stage rule reads each rank's own work, so the row is not taken for hot.
TEST(OnlineCauses, ASlowRanksRowMateInAHotDpColumnDoesNotMakeItsStageImbalanced) {
  SyntheticJob job;
  job.dp = 2;
  job.pp = 2;
  job.microbatches = 4;
  job.rank_speed = {1.0, 1.25, 1.4, 1.0};  // rank 2: stage 1, dp 0; rank 1: stage 0, dp 1
  job.jitter = 0.01;
  const auto verdicts = analyze(run_synthetic(job, kSteps));
  int hits = 0, row_mate_hot = 0;
  for (size_t i = kWarmup; i < verdicts.size(); ++i) {
    const StepVerdict& v = verdicts[i];
    EXPECT_NE(v.cause, Cause::kStageImbalance) << "step " << v.step << ": " << v.evidence;
    hits += v.cause == Cause::kWorker && v.worst == "rank:2";
    // Rank 1 is slow too: naming it is no mistake, naming its stage or rank 3 would be. (The
    // first steps name nobody while the noise model learns how wide two slow ranks' noise is.)
    if (v.cause != Cause::kNone) {
      EXPECT_EQ(v.cause, Cause::kWorker) << "step " << v.step << ": " << v.evidence;
      EXPECT_TRUE(v.worst == "rank:2" || v.worst == "rank:1") << "step " << v.step << ": " << v.evidence;
    }
    // What made the S_w test take the row for hot: rank 3 above half its stage's excess.
    row_mate_hot += v.worker_S[3] - 1.0 >= 0.5 * (v.stage_S[1] - 1.0);
  }
  EXPECT_GT(2 * hits, kSteps - kWarmup) << verdicts.back().evidence;  // the slower one, most steps
  EXPECT_GE(row_mate_hot, static_cast<int>(std::ceil(0.9 * (kSteps - kWarmup))));
}

TEST(OnlineCauses, LargeJobIsReplayedInLaneBatches) {
  SyntheticJob job;
  job.dp = 48;
  job.microbatches = 2;
  job.jitter = 0.01;
  job.rank_speed.assign(48, 1.0);
  job.rank_speed[17] = 1.3;
  const auto verdicts = analyze(run_synthetic(job, 6));
  for (size_t i = 1; i < verdicts.size(); ++i) {
    EXPECT_EQ(verdicts[i].cause, Cause::kWorker) << verdicts[i].evidence;
    EXPECT_EQ(verdicts[i].worst, "rank:17");
    EXPECT_EQ(verdicts[i].dp_S.size(), 48u);
    EXPECT_LT(verdicts[i].fidelity_err, 1e-6);
  }
}

TEST(OnlineCauses, ReplayReproducesTheMeasuredStepTimes) {
  SyntheticJob dp;
  dp.jitter = 0.02;
  dp.microbatches = 3;
  dp.rank_speed = {1.0, 1.2, 1.0, 1.0};
  SyntheticJob pp;
  pp.dp = 2;
  pp.pp = 2;
  pp.microbatches = 4;
  pp.jitter = 0.02;
  pp.gc = {{4, 3, 0.03}};
  for (const SyntheticJob& job : {dp, pp}) {
    const SyntheticRun run = run_synthetic(job, 12);
    const auto verdicts = analyze(run);
    ASSERT_EQ(verdicts.size(), run.step_time_s.size());
    std::vector<double> err;
    for (size_t i = 0; i < verdicts.size(); ++i) {
      ASSERT_TRUE(verdicts[i].analyzed);
      err.push_back(std::fabs(verdicts[i].replay_s / run.step_time_s[i] - 1.0));
      EXPECT_LT(verdicts[i].fidelity_err, 0.02);
      EXPECT_LE(verdicts[i].nodelay_s, verdicts[i].replay_s + 1e-12);
      EXPECT_GT(verdicts[i].launch_share, 0.0);
    }
    std::nth_element(err.begin(), err.begin() + static_cast<std::ptrdiff_t>(err.size() / 2), err.end());
    EXPECT_LT(err[err.size() / 2], 0.02);
  }
}

}  // namespace
}  // namespace sp::online
