// The noise model (issue 10): on synthetic jobs, what it must show. Clean jobs name almost no
// one and raise no alarm; a slow rank is named and alarmed; the alarm clears when it recovers.
// Plus the statistics underneath (p-value helpers, the jitter estimate). The thresholds are the
// issue's bar (1% of steps, 95% named, alarm within 10 / 30 steps), not fitted to these jobs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "decision/alarms.h"
#include "analyze_run.h"
#include "decision/noise_model.h"
#include "decision/significance.h"
#include "model/step_model_builder.h"
#include "noisy_job.h"
#include "driver/step_analysis.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::SyntheticJob;

struct Outcome {
  int steps = 0, named = 0, named_rank = 0;
  int64_t raised_at = -1, cleared_at = -1;
  int alarms = 0;
};

Outcome judge(const testing::SyntheticRun& run, const std::string& rank = "rank:1") {
  Outcome o;
  for (const StepVerdict& v : testing::analyze_run(run)) {
    ++o.steps;
    o.named += v.cause != Cause::kNone;
    o.named_rank += v.worst == rank;
    for (const AlarmEvent& a : v.alarms) {
      o.alarms += a.raised;
      if (a.target != rank) continue;
      if (a.raised && o.raised_at < 0) o.raised_at = a.step;
      if (!a.raised && o.cleared_at < 0) o.cleared_at = a.step;
    }
  }
  return o;
}

SyntheticJob job(int dp, int pp, double jitter, uint32_t seed) {
  SyntheticJob j;
  j.dp = dp;
  j.pp = pp;
  j.microbatches = pp > 1 ? 4 : 1;
  j.jitter = jitter;
  j.seed = seed;
  return j;
}

TEST(NoiseModel, CleanJobsNameAlmostNoOneAndRaiseNoAlarm) {
  struct Case {
    int dp, pp, steps;
    double jitter;
  };
  for (const Case& c : {Case{4, 1, 1000, 0.01}, Case{4, 1, 1000, 0.05}, Case{16, 1, 1000, 0.03},
                        Case{64, 1, 300, 0.05}, Case{8, 4, 300, 0.03}}) {
    const Outcome o = judge(testing::run_synthetic(job(c.dp, c.pp, c.jitter, 7), c.steps));
    SCOPED_TRACE(std::to_string(c.dp) + "x" + std::to_string(c.pp) + " jitter " + std::to_string(c.jitter));
    EXPECT_LE(o.named, c.steps / 100);  // at most 1% of the steps name a straggler
    EXPECT_EQ(o.alarms, 0);
  }
}

// One rank has no peers to learn jitter from, so the null has none: every step whose data wait
// ran a few microseconds over its mean was "significant" (cpu-delay on 29% of a real one-rank
// job's steps, at S 1.0006-1.0015). A slowdown under min_slowdown of the step is not named.
TEST(NoiseModel, AOneRankJobNamesNothingItLosesLessThanMinSlowdownTo) {
  testing::NoisyScenario one;
  one.job = job(1, 1, 0.0, 7);
  one.noise = testing::NoiseModel::with_jitter(0.01);  // data waits 2%: a few us a step
  one.steps = 300;
  const Outcome o = judge(testing::run_noisy(one).run);
  EXPECT_EQ(o.named, 0);
  EXPECT_EQ(o.alarms, 0);
  // A pause that costs the step more than that is still named, on the same job.
  testing::Fault gc;
  gc.kind = testing::FaultKind::kGcPauses;
  gc.pause_s = 0.005;  // ~7% of the 67 ms step
  gc.onset = 20;
  gc.every = 5;
  one.faults = {gc};
  const Outcome paused = judge(testing::run_noisy(one).run, "rank:0");
  EXPECT_GE(paused.named, 50);  // 56 pauses
  EXPECT_LE(paused.named, 56);
}

TEST(NoiseModel, ASlowRankIsNamedAndItsAlarmRaised) {
  struct Case {
    int dp, steps;
    double slow;
    double named_share;  // issue 10: a 10% slow rank named on >= 95% of steps
    int alarm_within;    // ... and alarmed within 10 steps; a 5% one within 30
  };
  // At 3% per-op jitter with 4 micro-batches of gradient accumulation (bench/detection's fault
  // scenarios), where the 5% rank makes the job 2.1% slower at 64 ranks (3.6% at 4). With one
  // micro-batch per step, a rank's own jitter is twice as large and jitter's slowest of 64
  // ranks is often later than the 5% rank: the job is then only 0.5% slower for it, less than
  // fixing jitter's slowest rank would save, and a rank is named only when it costs more than
  // jitter does (noise_verdict.cpp, worker_p), as ABarelySlowRankIsNotNamedWhenJitterCostsMore
  // shows.
  for (const Case& c : {Case{4, 200, 1.10, 0.95, 10}, Case{64, 200, 1.10, 0.95, 10}, Case{4, 200, 1.05, 0.0, 30},
                        Case{64, 200, 1.05, 0.0, 30}}) {
    SyntheticJob j = job(c.dp, 1, 0.03, 11);
    j.microbatches = 4;
    j.rank_speed.assign(static_cast<size_t>(c.dp), 1.0);
    j.rank_speed[1] = c.slow;
    const Outcome o = judge(testing::run_synthetic(j, c.steps));
    SCOPED_TRACE(std::to_string(c.dp) + " ranks, " + std::to_string(c.slow));
    EXPECT_GE(o.named_rank, static_cast<int>(c.named_share * c.steps));
    EXPECT_GE(o.raised_at, 0);
    EXPECT_LE(o.raised_at, c.alarm_within);
    EXPECT_EQ(o.cleared_at, -1);  // it stays slow: the alarm stays raised
    EXPECT_EQ(o.alarms, 1);
  }
}

// A rank significantly but slightly slower than its peers, by less than what jitter costs the
// step (64 ranks at 5% per-op jitter: the slowest rank's jitter costs ~10%; rank 1 is 3% slow):
// significant over the window, yet fixing it would recover nothing, so it is not named and no
// alarm is raised. At 1% jitter the same 3% is more than jitter costs: named, alarmed.
TEST(NoiseModel, ABarelySlowRankIsNotNamedWhenJitterCostsMore) {
  for (const double jitter : {0.05, 0.01}) {
    SyntheticJob j = job(64, 1, jitter, 13);
    j.rank_speed.assign(64, 1.0);
    j.rank_speed[1] = 1.03;
    const Outcome o = judge(testing::run_synthetic(j, 120));
    SCOPED_TRACE("jitter " + std::to_string(jitter));
    if (jitter > 0.03) {
      EXPECT_LE(o.named, 120 / 100);
      EXPECT_EQ(o.alarms, 0);
    } else {
      EXPECT_GE(o.named_rank, 100);
      EXPECT_EQ(o.alarms, 1);
    }
  }
}

// Ranks late together: a host whose eight GPUs all run 3% slow. Each of its ranks is as late
// as the single 3% slow rank above, which is named at 1% jitter, yet fixing any one of them
// saves nothing (its siblings finish as late): no rank is named and no alarm raised. (A host
// as a unit of its own is not tested yet: online/README's known limits.)
TEST(NoiseModel, AHostOfRanksLateTogetherIsNotNamedAsARank) {
  SyntheticJob j = job(64, 1, 0.01, 13);
  j.rank_speed.assign(64, 1.0);
  for (int r = 0; r < 8; ++r) j.rank_speed[static_cast<size_t>(r)] = 1.03;
  const Outcome o = judge(testing::run_synthetic(j, 120));
  EXPECT_LE(o.named, 120 / 100);
  EXPECT_EQ(o.alarms, 0);
}

// The same job, rank 1 slow for its first 60 steps and healthy after: the alarm is raised, then
// cleared within a long window (32 steps) of the recovery.
TEST(NoiseModel, TheAlarmClearsWhenTheRankRecovers) {
  SyntheticJob j = job(8, 1, 0.03, 5);
  const testing::SyntheticRun healthy = testing::run_synthetic(j, 120);
  j.rank_speed.assign(8, 1.0);
  j.rank_speed[1] = 1.3;
  testing::SyntheticRun run = testing::run_synthetic(j, 60);
  run.steps.insert(run.steps.end(), healthy.steps.begin() + 60, healthy.steps.end());
  const Outcome o = judge(run);
  EXPECT_GE(o.raised_at, 0);
  EXPECT_LE(o.raised_at, 10);
  EXPECT_GT(o.cleared_at, 60);
  EXPECT_LE(o.cleared_at, 60 + 32);
}

// GC pauses on rank 2 every 5th step: the steps name gc on rank 2, and the job-level alarm for
// the cause says which rank's pauses it is (a user acts on the rank), and nothing else alarms.
TEST(NoiseModel, RecurringPausesOnOneRankRaiseAGcAlarmNamingIt) {
  SyntheticJob j = job(8, 1, 0.03, 3);
  for (int64_t step = 8; step < 120; step += 5) j.gc.push_back({step, 2, 0.05});
  int gc_alarms = 0, other_alarms = 0;
  for (const StepVerdict& v : testing::analyze_run(testing::run_synthetic(j, 120))) {
    for (const AlarmEvent& a : v.alarms) {
      if (!a.raised) continue;
      const bool gc = a.cause == Cause::kGc && a.target == "rank:2";
      gc_alarms += gc;
      other_alarms += !gc;
      if (gc) {
        EXPECT_EQ(format_alarm_line(a).rfind("straggler_probe alarm raised: rank:2 cause=gc since step 8 (", 0), 0u)
            << format_alarm_line(a);
      }
    }
  }
  EXPECT_EQ(gc_alarms, 1);
  EXPECT_EQ(other_alarms, 0);
}

// Rank 1 30% slow on every 4th step only: named on those steps, never on most recent ones, so
// its own alarm (named on most of the short window) cannot come; the worker cause alarm says
// "rank:1" after a few of its slow steps, once.
TEST(NoiseModel, AnIntermittentlySlowRankRaisesOneWorkerAlarm) {
  SyntheticJob j = job(8, 1, 0.03, 5);
  const testing::SyntheticRun healthy = testing::run_synthetic(j, 120);
  j.rank_speed.assign(8, 1.0);
  j.rank_speed[1] = 1.3;
  const testing::SyntheticRun slow = testing::run_synthetic(j, 120);
  testing::SyntheticRun run = healthy;
  for (size_t s = 8; s < run.steps.size(); s += 4) run.steps[s] = slow.steps[s];
  const Outcome o = judge(run);
  EXPECT_EQ(o.alarms, 1);
  EXPECT_GE(o.raised_at, 8);
  EXPECT_LE(o.raised_at, 8 + 30);
  EXPECT_GE(o.named_rank, 25);  // >= 90% of its 28 slow steps
}

TEST(NoiseModel, PValueHelpers) {
  EXPECT_NEAR(normal_upper(0.0), 0.5, 1e-12);
  EXPECT_NEAR(normal_upper(3.0902), 1e-3, 1e-6);
  EXPECT_NEAR(sidak(0.01, 1), 0.01, 1e-15);
  EXPECT_NEAR(sidak(1e-9, 4096), 4.096e-6, 1e-10);  // exact where 1 - (1 - p)^n loses digits
  EXPECT_NEAR(binomial_upper(1, 10, 0.1), 1 - std::pow(0.9, 10), 1e-12);
  EXPECT_NEAR(binomial_upper(10, 10, 0.5), std::pow(0.5, 10), 1e-15);
  EXPECT_EQ(binomial_upper(0, 10, 0.3), 1.0);
}

// A unit family: 64 units of N(0, 0.01) log scores; a unit 0.05 above the others this step is
// significant corrected for 64 units, one at the others' level is not; over a window, a unit
// 0.01 above on every step is significant while none is on one step.
TEST(NoiseModel, UnitFamilyTests) {
  std::mt19937 rng(3);
  std::normal_distribution<double> z(0.0, 0.01);
  UnitFamily f(20, 32, 3.09, false);
  auto draw = [&](double shift_of_7) {
    std::vector<double> s(64);
    for (size_t u = 0; u < s.size(); ++u) s[u] = std::exp(z(rng) + (u == 7 ? shift_of_7 : 0.0));
    return s;
  };
  for (int i = 0; i < 20; ++i) f.add_null(draw(0));
  f.add_observed(draw(0.05));
  EXPECT_EQ(f.step_p(7), 1.0);  // one step seen: the job's own dispersion is not known yet
  for (int i = 0; i < 3; ++i) f.add_observed(draw(0));
  EXPECT_NEAR(f.widening(), 1.0, 0.6);  // observed like the null: hardly widened
  f.add_observed(draw(0.05));
  EXPECT_LT(f.step_p(7), 1e-3);
  EXPECT_GT(f.step_p(3), 1e-3);
  for (int i = 0; i < 32; ++i) f.add_observed(draw(0.01));
  EXPECT_LT(sidak(f.window_p1(7, 32), 64), 1e-5);
  EXPECT_GT(sidak(f.window_p1(3, 32), 64), 1e-3);
}

// Calibration: a job whose scores scatter three times wider from step to step than the null's
// model (untraced OS noise) widens the null; a unit 0.05 above, significant against the model
// alone, is then within the job's noise. A unit 0.3 above every step is not.
TEST(NoiseModel, AJobNoisierThanTheNullWidensIt) {
  std::mt19937 rng(5);
  std::normal_distribution<double> model(0.0, 0.01), real(0.0, 0.03);
  UnitFamily f(20, 32, 3.09, false);
  auto draw = [&](std::normal_distribution<double>& z, double shift_of_7) {
    std::vector<double> s(64);
    for (size_t u = 0; u < s.size(); ++u) s[u] = std::exp(z(rng) + (u == 7 ? shift_of_7 : 0.0));
    return s;
  };
  for (int i = 0; i < 20; ++i) f.add_null(draw(model, 0));
  for (int i = 0; i < 31; ++i) f.add_observed(draw(real, 0));
  EXPECT_GT(f.widening(), 2.5);
  EXPECT_LT(f.widening(), 4.0);
  f.add_observed(draw(real, 0.05));
  EXPECT_GT(f.step_p(7), 1e-3);
  f.add_observed(draw(real, 0.3));
  EXPECT_LT(f.step_p(7), 1e-3);
}

// The jitter estimate: a rank slow on every step is its own baseline and does not widen it.
TEST(NoiseModel, APersistentlySlowRankDoesNotWidenTheJitter) {
  SyntheticJob j = job(4, 1, 0.02, 9);
  const testing::SyntheticRun clean = testing::run_synthetic(j, 20);
  j.rank_speed = {1.0, 1.0, 1.0, 1.3};
  const testing::SyntheticRun slow = testing::run_synthetic(j, 20);
  auto sigma = [](const testing::SyntheticRun& run) {
    NoiseWindow w(20);
    StepModel last;
    for (const auto& step : run.steps) {
      std::vector<const runtime::StepSummary*> by_rank;
      for (const auto& s : step) by_rank.push_back(&s);
      std::string error;
      auto m = build_step_model(by_rank, ModelOptions{}, &error);
      EXPECT_TRUE(m) << error;
      w.push(*m);
      last = *m;
    }
    const NoiseSpread s = w.spread(last);
    for (size_t k = 0; k < last.ideal_keys.size(); ++k) {
      if (last.ideal_keys[k] == "backward-compute") return s.work_sigma[k];
    }
    return -1.0;
  };
  const double s_clean = sigma(clean), s_slow = sigma(slow);
  EXPECT_NEAR(s_clean, 0.02, 0.006);  // the synthetic jitter: 2% per op
  EXPECT_NEAR(s_slow / s_clean, 1.0, 0.25);
}


// The job's first verdict waits for one null replay, not a window's worth: the first step owes
// the rest of its pool (window_steps - 1 more replays of that step) until the host settles it
// after the line is out (OnlineAnalyzer::emit), charged to the analysis's CPU; the second step
// is tested against the full pool and owes nothing.
TEST(NoiseModel, TheFirstStepOwesTheRestOfItsNullPoolUntilItsLineIsOut) {
  const testing::SyntheticRun run = testing::run_synthetic(job(8, 1, 0.02, 3), 2);
  OnlineConfig cfg;
  cfg.world_size = 8;
  StepAnalysis analysis(cfg);
  OnlineStats stats;
  auto analyze = [&](size_t i) {
    std::vector<const runtime::StepSummary*> by_rank;
    for (const auto& summary : run.steps[i]) by_rank.push_back(&summary);
    StepAnalysis::Outcome o = analysis.analyze(run.steps[i][0].step, by_rank, 0, &stats);
    EXPECT_EQ(o.skip_kind, "") << o.skip_reason;
    return o.verdict;
  };
  const StepVerdict first = analyze(0);
  EXPECT_EQ(first.cause, Cause::kNone);  // nothing is named on the first step either way
  EXPECT_TRUE(analysis.owes_work());
  const double cpu_before = stats.analysis_cpu_s;
  analysis.settle(&stats);
  EXPECT_FALSE(analysis.owes_work());
  EXPECT_GT(stats.analysis_cpu_s, cpu_before);
  const StepVerdict second = analyze(1);
  EXPECT_FALSE(analysis.owes_work());
  EXPECT_TRUE(second.null_ready);
  EXPECT_GT(second.S_null, 1.0);
  EXPECT_EQ(stats.analysis_errors, 0u) << stats.last_error;

  // A host that never settles: the next analyze() does it first, and the second step is judged
  // against the same full pool.
  StepAnalysis unsettled(cfg);
  OnlineStats stats2;
  for (size_t i = 0; i < 2; ++i) {
    std::vector<const runtime::StepSummary*> by_rank;
    for (const auto& summary : run.steps[i]) by_rank.push_back(&summary);
    const StepAnalysis::Outcome o = unsettled.analyze(run.steps[i][0].step, by_rank, 0, &stats2);
    if (i == 1) {
      EXPECT_FALSE(unsettled.owes_work());
      EXPECT_EQ(o.verdict.S_null, second.S_null);
      EXPECT_EQ(o.verdict.p_S, second.p_S);
    }
  }
}
}  // namespace
}  // namespace sp::online
