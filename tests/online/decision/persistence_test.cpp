// Persistence as evidence (online/src/decision/persistence.h): who leads, step after step. The test on
// its own (exact sign tests, its level on exchangeable units, a host of units late together,
// a noisier unit), and in the analysis: a rank a few percent slow within a jitter the null
// learned much wider than the ranks differ is named once the window fills, by who led it, and
// its clean twin names no one. The bars are the (1% of clean steps, most steps named
// once the window is full), not fitted to these jobs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "analyze_run.h"
#include "decision/noise_model.h"
#include "noisy_job.h"
#include "decision/persistence.h"
#include "decision/significance.h"
#include "model/step_model_builder.h"
#include "straggler_probe/online/analyzer.h"

namespace sp::online {
namespace {

TEST(Persistence, SignTestTailsAreExact) {
  EXPECT_DOUBLE_EQ(sign_test_p(32, 32), std::ldexp(1.0, -32));
  EXPECT_DOUBLE_EQ(sign_test_p(0, 10), 1.0);
  EXPECT_DOUBLE_EQ(sign_test_p(11, 10), 0.0);
  EXPECT_NEAR(sign_test_p(5, 10), 638.0 / 1024.0, 1e-12);  // C(10,5..10) / 2^10
  EXPECT_NEAR(sign_test_p(27, 32), 41449.0 * std::ldexp(1.0, -32) + 201376.0 * std::ldexp(1.0, -32), 1e-15);
}

// A family of `units` fed `steps` observed steps: unit u's score exp(shift[u] + sd[u] z).
UnitFamily family_of(std::mt19937_64* rng, int steps, const std::vector<double>& shift, const std::vector<double>& sd) {
  UnitFamily f(20, 32, 3.0, false);
  f.set_floor(1e-9);
  std::normal_distribution<double> z;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> scores(shift.size());
    for (size_t u = 0; u < shift.size(); ++u) scores[u] = std::exp(shift[u] + sd[u] * z(*rng));
    f.add_observed(scores);
  }
  return f;
}

TEST(Persistence, AUnitThatLeadsEveryStepByLessThanTheOthersScatterAcrossStepsIsFound) {
  std::mt19937_64 rng(3);
  // Unit 2 is 4% late; every unit's score also moves 10% from step to step, together (what
  // the magnitudes see as jitter), and 0.5% on its own.
  UnitFamily f(20, 32, 3.0, false);
  f.set_floor(1e-9);
  std::normal_distribution<double> z;
  for (int s = 0; s < 32; ++s) {
    const double common = 0.10 * z(rng);
    std::vector<double> scores(4);
    for (size_t u = 0; u < 4; ++u) scores[u] = std::exp(common + (u == 2 ? 0.04 : 0.0) + 0.005 * z(rng));
    f.add_observed(scores);
  }
  const Persistence p = persistence(f, 32);
  EXPECT_EQ(p.unit, 2);
  EXPECT_EQ(p.led, 32);
  EXPECT_EQ(p.rival_led, 0);
  EXPECT_EQ(p.ahead, 32);
  EXPECT_EQ(p.steps, 32);
  EXPECT_DOUBLE_EQ(p.p, 4 * std::ldexp(1.0, -32));
  // Another unit's own evidence: a rival that led every step.
  EXPECT_EQ(persistence(f, 32, 1).unit, 1);
  EXPECT_DOUBLE_EQ(persistence(f, 32, 1).p, 1.0);
}

// The share of windows in which the test names a unit at level a, over many independent
// families: at most a (plus the binomial spread of `trials` draws) when no unit is special.
double false_share(uint64_t seed, int trials, const std::vector<double>& shift, const std::vector<double>& sd, double a) {
  std::mt19937_64 rng(seed);
  int named = 0;
  for (int t = 0; t < trials; ++t) named += persistence(family_of(&rng, 32, shift, sd), 32).p < a;
  return static_cast<double>(named) / trials;
}

TEST(Persistence, ExchangeableUnitsAreNamedAtMostAtTheLevel) {
  for (const size_t units : {2u, 4u, 64u}) {
    SCOPED_TRACE(units);
    EXPECT_LE(false_share(units, 400, std::vector<double>(units, 0.0), std::vector<double>(units, 0.02), 0.05), 0.05 + 0.033);
  }
}

// Two ranks of one host 4% late together among eight: each leads about half the steps, and
// neither out-leads the other (the rival half of the test).
TEST(Persistence, AHostOfUnitsLateTogetherIsNoOneUnitsLead) {
  std::vector<double> shift(8, 0.0);
  shift[0] = shift[1] = 0.04;
  EXPECT_LE(false_share(7, 400, shift, std::vector<double>(8, 0.01), 0.01), 0.01 + 0.015);
}

// A unit that scatters thirty times as much, around the same centre, leads half the steps (a
// maximum favours spread; its rivals a sixth each: the lead half alone names it in ~6% of these
// windows at 0.01) but is ahead of each peer only half the time (the pairwise half).
TEST(Persistence, ANoisierUnitIsNotALateOne) {
  std::vector<double> sd(4, 0.01);
  sd[0] = 0.3;
  EXPECT_LE(false_share(9, 400, std::vector<double>(4, 0.0), sd, 0.01), 0.01 + 0.015);
}

TEST(Persistence, TiesLeadNoOne) {
  UnitFamily f(20, 32, 3.0, false);
  f.set_floor(1e-9);
  for (int s = 0; s < 10; ++s) f.add_observed({1.0, 1.0, 1.0});
  const Persistence p = persistence(f, 32);
  EXPECT_EQ(p.unit, -1);
  EXPECT_EQ(p.steps, 10);
  EXPECT_DOUBLE_EQ(p.p, 1.0);
}

// The jitter is learned without the leading rank (noise_verdict.cpp, find_leaders): rank 3's
// compute scatters ten times as much as its peers' (a rank that burns CPU), which widens the
// per-op jitter the null draws from and the dp ranks' calibration unless it is left out.
TEST(Persistence, TheLeadingRanksOwnScatterIsLeftOutOfTheJitter) {
  testing::SyntheticJob j;
  j.dp = 4;
  j.jitter = 0.02;
  j.seed = 9;
  j.duration_hook = [](const testing::DurationSite& site, double d) {
    if (site.rank != 3 || (site.kind != SP_OP_FORWARD && site.kind != SP_OP_BACKWARD)) return d;
    std::mt19937_64 rng(static_cast<uint64_t>(site.step) * 1000003u + site.kind * 101u + static_cast<uint64_t>(site.index + 1));
    return d * std::exp(0.2 * std::normal_distribution<double>()(rng));
  };
  const testing::SyntheticRun run = testing::run_synthetic(j, 20);
  NoiseWindow w(20);
  StepModel last;
  for (const auto& step : run.steps) {
    std::vector<const runtime::StepSummary*> by_rank;
    for (const auto& summary : step) by_rank.push_back(&summary);
    std::string error;
    auto m = build_step_model(by_rank, ModelOptions{}, &error);
    ASSERT_TRUE(m) << error;
    w.push(*m);
    last = *m;
  }
  const std::vector<char> without_3 = {0, 0, 0, 1};
  const NoiseSpread all = w.spread(last), rest = w.spread(last, &without_3);
  for (size_t k = 0; k < last.ideal_keys.size(); ++k) {
    if (last.ideal_keys[k] != "backward-compute") continue;
    EXPECT_NEAR(rest.work_sigma[k], 0.02, 0.006);  // the peers' 2%
    EXPECT_GT(all.work_sigma[k], 1.3 * rest.work_sigma[k]);
  }
  // The dp ranks' calibration: the same, one unit's scores scattering ten times as much.
  std::mt19937_64 rng(4);
  std::normal_distribution<double> z;
  UnitFamily f(20, 32, 3.0, false);
  f.set_floor(1e-9);
  for (int s = 0; s < 32; ++s) {
    std::vector<double> null(4), observed(4);
    for (size_t u = 0; u < 4; ++u) {
      null[u] = std::exp(0.01 * z(rng));
      observed[u] = std::exp((u == 3 ? 0.1 : 0.01) * z(rng));
    }
    f.add_null(null);
    f.add_observed(observed);
  }
  const double widened = f.widening();
  f.exclude_from_calibration(3);
  EXPECT_LT(f.widening(), widened / 1.2);
  f.exclude_from_calibration(-1);
  EXPECT_DOUBLE_EQ(f.widening(), widened);
}

// The noisy job of the detection benchmark with work moving between each micro-batch's forward
// and backward (NoiseModel::fb_shift): each op scatters by tens of percent, a rank's total by
// about 1%. The null learns the ops' scatter: its S is ~1.18, so rank 2, 4% slow, is within
// each step's jitter on every step, yet it is the slowest rank on nearly every step.
testing::NoisyScenario shifted_job(bool slow) {
  testing::NoisyScenario sc;
  sc.job.dp = 4;
  sc.job.microbatches = 4;
  sc.noise = testing::NoiseModel::with_jitter(0.03);
  sc.noise.fb_shift = 0.9;
  if (slow) sc.faults = {{testing::FaultKind::kSlowRank, 2, 0.04}};
  sc.steps = 150;
  sc.seed = 5;
  return sc;
}

TEST(Persistence, ASlowRankWithinTheJitterIsNamedByWhoLedOnceTheWindowFills) {
  const std::vector<StepVerdict> vs = testing::analyze_run(testing::run_noisy(shifted_job(true)).run);
  int after = 0, named = 0, by_lead = 0, alarms = 0;
  for (const StepVerdict& v : vs) {
    for (const AlarmEvent& a : v.alarms) alarms += a.raised && a.target == "rank:2";
    if (v.step < 40) continue;  // the long window (32 steps) fills
    ++after;
    EXPECT_GT(v.S_null, 1.10) << v.step;  // the margin is within what the null calls jitter
    if (v.worst != "rank:2") continue;
    ++named;
    if (v.named_by != "persistence") continue;
    ++by_lead;
    EXPECT_EQ(v.cause, Cause::kWorker);
    EXPECT_EQ(v.persist.target, "rank:2");
    EXPECT_LT(v.persist.p * 4, v.p * 1.0000001);  // the verdict's p is the lead's share of alpha
    EXPECT_NE(format_log_line(v).find(" persist=" + std::to_string(v.persist.led) + "/32"), std::string::npos);
  }
  EXPECT_GE(named, after * 9 / 10);
  EXPECT_GE(by_lead, named * 9 / 10);  // the magnitudes alone name it on no step
  EXPECT_EQ(alarms, 1);
}

TEST(Persistence, ItsCleanTwinNamesNoOne) {
  int named = 0, alarms = 0;
  for (const StepVerdict& v : testing::analyze_run(testing::run_noisy(shifted_job(false)).run)) {
    named += v.cause != Cause::kNone;
    alarms += static_cast<int>(v.alarms.size());
  }
  EXPECT_LE(named, 150 / 100);
  EXPECT_EQ(alarms, 0);
}

}  // namespace
}  // namespace sp::online
