// Who does more work (online/src/decision/persistence.h, WorkHistory): the CPU work test. Its
// rank sum's null against brute force, its level on exchangeable units, its power at a rank's
// onset and over a window, and in the analysis: a rank that computes more on cores its peers
// share, whose wall times scatter 25%, named by its CPU work and raising its alarm; its clean
// twin names and raises nothing; a device-timed job's CPU times are not used.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "analyze_run.h"
#include "decision/persistence.h"
#include "decision/significance.h"
#include "noisy_job.h"
#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/online/log_line.h"

namespace sp::online {
namespace {

// P(sum >= s) by enumerating every n-tuple of ranks, each level weighted by its share of ranks.
double brute_force_tail(const RankSumTail& t, int n, int s) {
  double p = 0;
  std::function<void(int, int, double)> walk = [&](int step, int sum, double w) {
    if (step == n) {
      p += sum >= s ? w : 0.0;
      return;
    }
    for (int r = 0; r < t.units(); ++r) walk(step + 1, sum + t.level(r), w / t.units());
  };
  walk(0, 0, 1.0);
  return p;
}

TEST(RankSumTail, IsExactAgainstEnumeration) {
  const RankSumTail four(4, 8);
  EXPECT_EQ(four.levels(), 4);
  EXPECT_NEAR(four.p(24, 8), std::pow(4.0, -8), 1e-18);       // the most on all 8
  EXPECT_NEAR(four.p(23, 8), 9 * std::pow(4.0, -8), 1e-18);   // ... or on 7 and second on 1
  EXPECT_EQ(four.p(25, 8), 0.0);
  EXPECT_EQ(four.p(0, 8), 1.0);
  EXPECT_EQ(four.p(3, 9), 1.0);  // more steps than it was built for: no evidence
  for (int s = 0; s <= 13; ++s) EXPECT_NEAR(four.p(s, 4), brute_force_tail(four, 4, s), 1e-14) << s;
  // Above 64 units, ranks are taken to 64 levels, each level's probability its share of ranks.
  const RankSumTail many(100, 3);
  EXPECT_EQ(many.levels(), RankSumTail::kMaxLevels);
  EXPECT_EQ(many.level(0), 0);
  EXPECT_EQ(many.level(99), 63);
  for (int s : {0, 60, 120, 150, 180, 189}) EXPECT_NEAR(many.p(s, 3), brute_force_tail(many, 3, s), 1e-9) << s;
}

// A rank that starts computing more is found within the short window: the most work on 7 of 8
// steps and the second on the 8th is p = 9 x 4^-8 x 3 tested units (the first excluded).
TEST(WorkHistory, ARankThatStartsComputingMoreIsFoundWithinEightSteps) {
  WorkHistory h(32);
  for (int s = 0; s < 20; ++s) {  // units 1-3 take turns doing the most
    std::vector<double> cpu{0.10, 0.10, 0.10, 0.10};
    cpu[static_cast<size_t>(1 + s % 3)] += 0.01;
    cpu[static_cast<size_t>(1 + (s + 1) % 3)] += 0.005;
    h.add(cpu, 0.1);
  }
  EXPECT_GT(h.lead(8, 0).p, 1e-3);
  for (int s = 0; s < 8; ++s) h.add({0.10, 0.11, s == 3 ? 0.105 : 0.13, 0.104}, 0.1);
  const WorkHistory::Lead l = h.lead(8, 0);
  EXPECT_EQ(l.unit, 2);
  EXPECT_EQ(l.rank_sum, 23);
  EXPECT_NEAR(l.p, 3 * 9 * std::pow(4.0, -8), 1e-12);
}

// The CPU work test's false-positive rate on exchangeable units: windows of 32 steps, each unit's
// CPU time log-normal around one level, the share of windows whose p is below the level. The
// rank sum's null is exact for every N, so the share stays under the level but for its
// discreteness and the Bonferroni's slack.
double work_false_share(size_t units, int windows, double level, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  int named = 0;
  for (int w = 0; w < windows; ++w) {
    WorkHistory h(32);
    for (int s = 0; s < 32; ++s) {
      std::vector<double> cpu(units);
      for (double& c : cpu) c = 0.1 * std::exp(0.05 * z(rng));
      h.add(cpu, 0.1);
    }
    named += h.lead().p < level;
  }
  return static_cast<double>(named) / windows;
}

TEST(WorkHistory, ExchangeableUnitsAreNamedAtMostAtTheLevel) {
  for (const size_t units : {2u, 3u, 4u, 64u, 100u}) {
    SCOPED_TRACE(units);
    EXPECT_LE(work_false_share(units, 2000, 0.05, 11), 0.05 + 0.015);
  }
}

// One of four ranks computes 10% more on every step while each rank's CPU time scatters by 10%
// (more than the margin on many steps): above its peers' upper median on most of the window.
TEST(WorkHistory, AUnitThatDoesMoreWorkOnMostStepsIsFound) {
  std::mt19937 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  WorkHistory h(32);
  for (int s = 0; s < 32; ++s) {
    std::vector<double> cpu(4);
    for (double& c : cpu) c = 0.1 * std::exp(0.1 * z(rng));
    cpu[2] *= 1.3;
    h.add(cpu, 0.12);
  }
  const WorkHistory::Lead l = h.lead();
  EXPECT_EQ(l.unit, 2);
  EXPECT_EQ(l.steps, 32);
  EXPECT_GE(l.above, 28);
  EXPECT_GE(l.rank_sum, 32 * 3 - 6);  // the most work (rank 3) on nearly every step
  EXPECT_LT(l.p, 1e-3);
  EXPECT_GT(l.median_excess, 0.1);
}

// A group of units that all do more (a slower host: 8 of 64 ranks 5% above the rest, each
// rank's CPU time scattering by 1%) tops the order, but no one of them leads the others by
// what the verdict names (min_slowdown, 1% of the step): its lead is the scatter among them.
// One rank alone 5% above the rest leads every other by more than that.
TEST(WorkHistory, AGroupThatDoesMoreIsNoOneRanksWork) {
  std::mt19937 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  for (const int group : {8, 1}) {
    SCOPED_TRACE(group);
    WorkHistory h(32);
    for (int s = 0; s < 32; ++s) {
      std::vector<double> cpu(64);
      for (int u = 0; u < 64; ++u) {
        const bool more = u <= 8 && u > 8 - group;  // ranks 1-8, or rank 8 alone
        cpu[static_cast<size_t>(u)] = 0.1 * std::exp(0.01 * z(rng)) * (more ? 1.05 : 1.0);
      }
      h.add(cpu, 0.1);
    }
    const WorkHistory::Lead l = h.lead(32, 0);
    EXPECT_GE(l.unit, 9 - group);
    EXPECT_LE(l.unit, 8);
    EXPECT_LT(l.p, 1e-3);  // the order sees both
    EXPECT_EQ(l.median_lead >= 0.01, group == 1) << l.median_lead;
    if (group == 1) {
      EXPECT_EQ(l.most, 32);
    }
  }
}

// A step where some unit's CPU time is unknown (0) is not kept; a change in the number of units
// starts the history again; the window keeps the last `window` steps.
TEST(WorkHistory, UnknownStepsAreLeftOutAndTheWindowSlides) {
  WorkHistory h(3);
  h.add({0.1, 0.2}, 0.2);
  h.add({0.1, 0.0}, 0.2);
  EXPECT_EQ(h.lead().steps, 1);
  EXPECT_EQ(h.lead().unit, 1);
  EXPECT_NEAR(h.lead().median_excess, 0.5, 1e-6);  // (0.2 - 0.1) / 0.2
  for (int s = 0; s < 5; ++s) h.add({0.3, 0.1}, 0.2);
  EXPECT_EQ(h.lead().steps, 3);
  EXPECT_EQ(h.lead().unit, 0);
  h.add({0.1, 0.05, 0.4}, 0.2);
  EXPECT_EQ(h.lead().steps, 1);
  EXPECT_EQ(h.lead().unit, 2);
  // An excluded unit is a peer, never the one tested.
  EXPECT_EQ(h.lead(0, 2).unit, 0);
  EXPECT_LT(h.lead(0, 2).median_excess, 0);
}

// Ranks sharing cores: every op's time scatters by 25% (who got a core when), while the CPU
// time of each rank's step is its work, to 2%. Rank 2 computes 15% more on every step (its
// CPU time and its ops both), which the wall tests cannot tell from the scatter on most steps.
testing::SyntheticRun crowded_job(bool slow, bool with_cpu) {
  testing::NoisyScenario sc;
  sc.job.dp = 4;
  sc.noise = testing::NoiseModel::with_jitter(0.25);
  if (slow) sc.faults = {{testing::FaultKind::kSlowRank, 2, 0.15}};
  sc.steps = 80;
  sc.seed = 9;
  testing::SyntheticRun run = testing::run_noisy(sc).run;
  std::mt19937 rng(4);
  std::normal_distribution<double> z(0.0, 1.0);
  const double work_s = sc.job.forward_s + sc.job.backward_s + sc.job.optimizer_s;
  for (auto& step : run.steps) {
    for (runtime::StepSummary& s : step) {
      const double factor = (slow && s.rank == 2 ? 1.15 : 1.0) * std::exp(0.02 * z(rng));
      s.step_cpu_ns = with_cpu ? static_cast<uint64_t>(work_s * factor * 1e9) : 0;
    }
  }
  return run;
}

struct Named {
  int after = 0, rank2 = 0, by_cpu = 0, any = 0;
  int rank2_alarms = 0, other_alarms = 0;  // raised, over the whole run
};

Named named_in(const testing::SyntheticRun& run) {
  Named n;
  for (const StepVerdict& v : testing::analyze_run(run)) {
    for (const AlarmEvent& a : v.alarms) {
      if (!a.raised) continue;
      (a.target == "rank:2" && a.cause == Cause::kWorker ? n.rank2_alarms : n.other_alarms) += 1;
    }
    if (v.step < 20) continue;
    ++n.after;
    n.any += v.cause != Cause::kNone;
    if (v.cause != Cause::kWorker || v.worst != "rank:2") continue;
    ++n.rank2;
    if (v.named_by != "cpu-work") continue;
    ++n.by_cpu;
    EXPECT_GE(v.cpu_work.above, v.cpu_work.of * 3 / 4) << v.step;
    EXPECT_NE(format_log_line(v).find(" cpu_work="), std::string::npos);
  }
  return n;
}

TEST(WorkHistory, ARankThatComputesMoreOnCrowdedCoresIsNamedByItsCpuWork) {
  const Named with_cpu = named_in(crowded_job(true, true));
  const Named wall_only = named_in(crowded_job(true, false));
  const Named clean = named_in(crowded_job(false, true));
  EXPECT_GE(with_cpu.rank2, with_cpu.after * 8 / 10);
  EXPECT_GE(with_cpu.by_cpu, with_cpu.rank2 / 2);
  EXPECT_LT(wall_only.rank2, with_cpu.rank2);  // the wall tests alone find it less often
  EXPECT_LE(clean.any, 1);
  // The test that names its steps raises its alarm, once; the clean twin raises none.
  EXPECT_EQ(with_cpu.rank2_alarms, 1);
  EXPECT_EQ(with_cpu.other_alarms, 0);
  EXPECT_EQ(clean.rank2_alarms + clean.other_alarms, 0);
  std::printf("named rank 2 on %d of %d steps (%d by cpu-work, %d alarm); wall only %d; clean twin %d\n",
              with_cpu.rank2, with_cpu.after, with_cpu.by_cpu, with_cpu.rank2_alarms, wall_only.rank2, clean.any);
}

// Where a rank's ops are timed off the CPU (a device's kernels), its CPU time is not its work
// (a thread waiting for a device may spin): the same job's CPU times are not used.
TEST(WorkHistory, CpuTimeIsNotWorkWhereOpsAreTimedOnADevice) {
  testing::SyntheticRun run = crowded_job(true, true);
  for (auto& step : run.steps) {
    for (runtime::StepSummary& s : step) {
      if (!s.ops.empty()) s.ops.front().time_source = SP_TIME_CUDA_EVENT;
    }
  }
  for (const StepVerdict& v : testing::analyze_run(run)) EXPECT_NE(v.named_by, "cpu-work") << v.step;
}

}  // namespace
}  // namespace sp::online
