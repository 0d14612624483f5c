// The noisy synthetic job of the detection benchmark: its noise has the stated statistics, its
// ground truth names the planted fault, its measured slowdown is the fault's own, and a seed
// gives the same job every time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "noisy_job.h"

namespace sp::online::testing {
namespace {

NoiseModel quiet() {
  NoiseModel m;
  m.compute_sigma = m.data_sigma = m.comm_sigma = 0;
  m.outlier_rate = 0;
  m.drift_host = -1;
  return m;
}

NoisyScenario scenario(std::vector<Fault> faults, NoiseModel noise = quiet(), int steps = 12) {
  NoisyScenario sc;
  sc.job.dp = 4;
  sc.noise = noise;
  sc.faults = std::move(faults);
  sc.steps = steps;
  sc.seed = 11;
  return sc;
}

double seconds(const sp_event& e) { return static_cast<double>(e.end_ns - e.start_ns) * 1e-9; }

const sp_event& find_op(const runtime::StepSummary& s, uint32_t kind, int mb = -1) {
  for (const sp_event& e : s.ops) {
    if (e.kind == kind && (mb < 0 || e.microbatch == mb)) return e;
  }
  throw std::runtime_error("no such op");
}

double mean_sd(const std::vector<double>& v, double* sd) {
  double m = 0, q = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) q += (x - m) * (x - m);
  *sd = std::sqrt(q / static_cast<double>(v.size() - 1));
  return m;
}

TEST(NoisyJob, JitterIsLogNormalWithTheStatedSigmaAndMeanOne) {
  for (double sigma : {0.01, 0.05}) {
    NoiseModel m = quiet();
    m.compute_sigma = sigma;
    const NoiseSource noise(m, 3, 1);
    std::vector<double> logs, factors;
    for (int i = 0; i < 200000; ++i) {
      const double f = noise.apply({SP_OP_BACKWARD, i / 1000, i % 1000, -1, 0}, 1.0, 1.0);
      factors.push_back(f);
      logs.push_back(std::log(f));
    }
    double sd = 0, fsd = 0;
    const double mean_log = mean_sd(logs, &sd);
    EXPECT_NEAR(sd / sigma, 1.0, 0.01) << sigma;                    // 200k draws: SE 0.16%
    EXPECT_NEAR(mean_log, -sigma * sigma / 2, 4 * sigma / std::sqrt(2e5));
    EXPECT_NEAR(mean_sd(factors, &fsd), 1.0, 4 * sigma / std::sqrt(2e5));
  }
}

TEST(NoisyJob, DataWaitsAndTransfersGetTheirOwnSigma) {
  const NoiseModel m = NoiseModel::with_jitter(0.02);
  EXPECT_DOUBLE_EQ(m.data_sigma, 0.04);
  const NoiseSource noise(m, 5, 1);
  for (uint32_t kind : {SP_OP_DATA_WAIT, SP_OP_COLLECTIVE, SP_OP_SEND}) {
    std::vector<double> logs;
    for (int i = 0; i < 100000; ++i) logs.push_back(std::log(noise.apply({kind, 0, i, -1, 0}, 1.0, 0.0)));
    double sd = 0;
    mean_sd(logs, &sd);
    EXPECT_NEAR(sd / 0.04, 1.0, 0.015) << kind;
  }
}

TEST(NoisyJob, OutliersComeAtTheirRateWithAParetoTail) {
  NoiseModel m = quiet();
  m.outlier_rate = 1e-3;
  m.outlier_min = 0.05;
  m.outlier_alpha = 2.0;
  const NoiseSource noise(m, 9, 1);
  int hits = 0, over_double = 0;
  const int n = 2'000'000;
  for (int i = 0; i < n; ++i) {
    const double extra = noise.outlier({SP_OP_FORWARD, i / 4096, i % 4096, -1, 0}, 2.0);
    if (extra == 0) continue;
    ++hits;
    EXPECT_GE(extra, 2.0 * 0.05);
    over_double += extra > 2 * 2.0 * 0.05;
  }
  // 2000 expected: a binomial's 4 sigma is 179; P(extra > 2 min) = 2^-alpha = 1/4.
  EXPECT_NEAR(hits, 2000, 179);
  EXPECT_NEAR(static_cast<double>(over_double) / hits, 0.25, 4 * std::sqrt(0.25 * 0.75 / hits));
}

TEST(NoisyJob, OneHostDriftsSlowlyWithinItsBound) {
  NoiseModel m = quiet();
  m.drift_host = 1;
  m.ranks_per_host = 8;
  m.drift_max = 0.02;
  m.drift_sigma = 0.002;
  const NoiseSource noise(m, 4, 2000);
  std::vector<double> steps;
  double lo = 1, hi = 1;
  for (int s = 0; s < 2000; ++s) {
    EXPECT_EQ(noise.host_factor(s, 7), 1.0);   // host 0
    EXPECT_EQ(noise.host_factor(s, 16), 1.0);  // host 2
    const double f = noise.host_factor(s, 8);
    EXPECT_EQ(f, noise.host_factor(s, 15));    // the whole host
    EXPECT_GE(f, 1.0);
    EXPECT_LE(f, 1.02);
    lo = std::min(lo, f), hi = std::max(hi, f);
    if (s) steps.push_back(f - noise.host_factor(s - 1, 8));
  }
  double sd = 0;
  mean_sd(steps, &sd);
  EXPECT_LT(sd, 0.0021);  // slow: per step about drift_sigma (reflections only shorten a step)
  EXPECT_GT(sd, 0.0015);
  EXPECT_GT(hi - lo, 0.015);  // and it does wander over the band
  EXPECT_EQ(noise.apply({SP_OP_FORWARD, 5, 8, -1, 0}, 1.0, 1.0), noise.host_factor(5, 8));
}

TEST(NoisyJob, JitterReachesTheSummariesOpByOp) {
  NoiseModel m = quiet();
  m.compute_sigma = 0.04;
  NoisyScenario sc = scenario({}, m, 40);
  sc.job.dp = 16;
  const NoisyRun run = run_noisy(sc);
  std::vector<double> logs;
  for (const auto& step : run.run.steps) {
    for (const auto& s : step) logs.push_back(std::log(seconds(find_op(s, SP_OP_FORWARD)) / sc.job.forward_s));
  }
  double sd = 0;
  mean_sd(logs, &sd);
  EXPECT_NEAR(sd / 0.04, 1.0, 0.1);  // 640 draws
  for (const StepTruth& t : run.truth) {
    EXPECT_EQ(t.cause(), "none");
    EXPECT_DOUBLE_EQ(t.measured_slowdown, 1.0);
  }
}

std::string fingerprint(const NoisyRun& r) {
  std::ostringstream o;
  for (const auto& step : r.run.steps) {
    for (const auto& s : step) {
      for (const sp_event& e : s.ops) o << e.kind << ':' << e.start_ns << '-' << e.end_ns << ' ';
      for (const auto& a : s.annotations) o << a.value << ' ';
    }
  }
  for (const StepTruth& t : r.truth) o << t.cause() << t.measured_slowdown;
  return o.str();
}

TEST(NoisyJob, ASeedGivesTheSameJobEveryTime) {
  NoisyScenario sc = scenario({{FaultKind::kSeqLens}, {FaultKind::kGcPauses, 2, 0, 0.03, 0, 3}},
                              NoiseModel::with_jitter(0.05));
  sc.noise.outlier_rate = 0.05;
  const std::string a = fingerprint(run_noisy(sc));
  EXPECT_EQ(a, fingerprint(run_noisy(sc)));
  sc.seed = 12;
  EXPECT_NE(a, fingerprint(run_noisy(sc)));
}

TEST(NoisyJob, ALongJobInPiecesHasTheSameDrawsAndFaults) {
  NoisyScenario sc = scenario({{FaultKind::kSeqLens}, {FaultKind::kGcPauses, 2, 0, 0.03, 1, 3}},
                              NoiseModel::with_jitter(0.05));
  const NoisyRun whole = run_noisy(sc);
  sc.first_step = 7;
  sc.steps = 5;
  const NoisyRun piece = run_noisy(sc);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(piece.truth[i].step, whole.truth[7 + i].step);
    EXPECT_EQ(piece.truth[i].cause(), whole.truth[7 + i].cause());
    for (size_t r = 0; r < 4; ++r) {
      const auto& a = piece.run.steps[i][r];
      const auto& b = whole.run.steps[7 + i][r];
      EXPECT_EQ(a.step, b.step);
      EXPECT_EQ(a.annotations.at(0).value, b.annotations.at(0).value);
      // (Not backward: it ends with its wait for the all-reduce, which depends on when the
      // other ranks started, and they start the piece together.)
      for (uint32_t kind : {SP_OP_DATA_WAIT, SP_OP_FORWARD, SP_OP_OPTIMIZER}) {
        EXPECT_NEAR(seconds(find_op(a, kind)), seconds(find_op(b, kind)), 2e-9) << kind;
      }
      EXPECT_EQ(find_op(a, SP_OP_COLLECTIVE).seq, find_op(b, SP_OP_COLLECTIVE).seq);
    }
  }
}

TEST(NoisyJob, ASlowRankIsTheTruthFromItsOnsetAndItsSlowdownIsItsExtraTime) {
  const NoisyRun run = run_noisy(scenario({{FaultKind::kSlowRank, 2, 0.3, 0, 4}}));
  const SyntheticJob base;
  for (const StepTruth& t : run.truth) {
    const double clean = run.clean_step_time_s[static_cast<size_t>(t.step)];
    if (t.step < 4) {
      EXPECT_EQ(t.cause(), "none") << t.step;
      EXPECT_DOUBLE_EQ(t.measured_slowdown, 1.0);
      continue;
    }
    ASSERT_EQ(t.active.size(), 1u);
    EXPECT_EQ(t.cause(), "worker");
    EXPECT_EQ(t.active[0].targets, std::vector<std::string>{"rank:2"});
    // One micro-batch, no noise: the slow rank's forward, backward and optimizer are the
    // critical path, 30% longer each.
    const double extra = 0.3 * (base.forward_s + base.backward_s + base.optimizer_s);
    EXPECT_NEAR(t.measured_slowdown, (clean + extra) / clean, 1e-6) << t.step;
  }
}

// With cpu_times, each rank's step CPU time is its work (forward, backward, optimizer): a slow
// rank's is 30% more from its onset; without, it is unknown (0).
TEST(NoisyJob, CpuTimesAreEachRanksWork) {
  NoisyScenario sc = scenario({{FaultKind::kSlowRank, 2, 0.3, 0, 4}});
  EXPECT_EQ(run_noisy(sc).run.steps[0][0].step_cpu_ns, 0u);
  sc.cpu_times = true;
  const NoisyRun run = run_noisy(sc);
  const SyntheticJob base;
  const double work_ns = 1e9 * (base.forward_s + base.backward_s + base.optimizer_s);
  for (const auto& step : run.run.steps) {
    for (const runtime::StepSummary& s : step) {
      const double slow = s.rank == 2 && s.step >= 4 ? 1.3 : 1.0;
      EXPECT_NEAR(static_cast<double>(s.step_cpu_ns), slow * work_ns, 1e3) << s.step << " " << s.rank;
    }
  }
}

TEST(NoisyJob, GcPausesAndDataStallsAddTheirPauseToTheStep) {
  const NoisyRun run = run_noisy(scenario({{FaultKind::kGcPauses, 1, 0, 0.04, 2, 3}}));
  const NoisyRun stall = run_noisy(scenario({{FaultKind::kDataStall, 3, 0, 0.02, 1, 2}}));
  for (int s = 0; s < 12; ++s) {
    const size_t si = static_cast<size_t>(s);
    const StepTruth& t = run.truth[si];
    if (s >= 2 && (s - 2) % 3 == 0) {
      const double pause = seconds(find_op(run.run.steps[si][1], SP_OP_GC));
      EXPECT_GT(pause, 0.04 * 0.5);
      EXPECT_LT(pause, 0.04 * 2);
      EXPECT_EQ(t.cause(), "gc");
      EXPECT_EQ(t.active[0].targets, std::vector<std::string>{"rank:1"});
      EXPECT_NEAR(run.run.step_time_s[si] - run.clean_step_time_s[si], pause, 1e-6);
    } else {
      EXPECT_EQ(t.cause(), "none") << s;
    }
    const StepTruth& u = stall.truth[si];
    const double wait = seconds(find_op(stall.run.steps[si][3], SP_OP_DATA_WAIT));
    if (s >= 1 && (s - 1) % 2 == 0) {
      EXPECT_EQ(u.cause(), "cpu-delay");
      EXPECT_EQ(u.active[0].targets, std::vector<std::string>{"rank:3"});
      EXPECT_NEAR(stall.run.step_time_s[si] - stall.clean_step_time_s[si], wait - 0.002, 1e-6);
    } else {
      EXPECT_NEAR(wait, 0.002, 1e-9);
      EXPECT_DOUBLE_EQ(u.measured_slowdown, 1.0);
    }
  }
}

double seq_cost(const std::string& lens) {
  double c = 0;
  std::istringstream in(lens);
  for (std::string tok; std::getline(in, tok, ',');) {
    const double l = std::stod(tok);
    c += l + l * l / 1024;
  }
  return c;
}

TEST(NoisyJob, SequenceLengthsDriveComputeAndNameTheBusiestRank) {
  NoisyScenario sc = scenario({{FaultKind::kSeqLens}});
  sc.job.microbatches = 3;
  const NoisyRun run = run_noisy(sc);
  int counted = 0;
  for (size_t si = 0; si < run.truth.size(); ++si) {
    std::vector<double> work;
    for (const auto& s : run.run.steps[si]) {
      ASSERT_EQ(s.annotations.size(), 3u);
      const double c0 = seq_cost(s.annotations[0].value);
      double w = 0;
      for (const auto& a : s.annotations) {
        const double c = seq_cost(a.value);
        w += c;
        const double ratio = seconds(find_op(s, SP_OP_FORWARD, a.microbatch)) /
                             seconds(find_op(s, SP_OP_FORWARD, s.annotations[0].microbatch));
        EXPECT_NEAR(ratio, c / c0, 1e-6);
      }
      work.push_back(w);
    }
    const StepTruth& t = run.truth[si];
    EXPECT_GE(t.measured_slowdown, 1.0 - 1e-12);  // the balanced twin is never slower here
    if (t.active.empty()) {
      EXPECT_TRUE(t.marginal);
      EXPECT_LT(t.measured_slowdown, 1.01);
      continue;
    }
    ++counted;
    const auto busiest = std::max_element(work.begin(), work.end()) - work.begin();
    EXPECT_EQ(t.cause(), "seq-imbalance");
    EXPECT_EQ(t.active[0].targets, std::vector<std::string>{"rank:" + std::to_string(busiest)});
  }
  EXPECT_GE(counted, 6);  // long tails: most steps are imbalanced
}

TEST(NoisyJob, AHeavierLastStageAndASlowLink) {
  NoisyScenario sc = scenario({{FaultKind::kHeavyLastStage, 0, 0.4}});
  sc.job.dp = 2;
  sc.job.pp = 2;
  sc.job.microbatches = 4;
  const NoisyRun heavy = run_noisy(sc);
  EXPECT_NEAR(seconds(find_op(heavy.run.steps[3][0], SP_OP_FORWARD)), sc.job.forward_s, 1e-9);
  EXPECT_NEAR(seconds(find_op(heavy.run.steps[3][3], SP_OP_FORWARD)), 1.4 * sc.job.forward_s, 1e-9);
  for (const StepTruth& t : heavy.truth) {
    EXPECT_EQ(t.cause(), "stage-imbalance");
    EXPECT_EQ(t.active[0].targets, std::vector<std::string>{"stage:1"});
    EXPECT_GT(t.measured_slowdown, 1.05);  // against the same work spread over both stages
  }
  sc.faults = {{FaultKind::kSlowLink, 1, 4.0}};
  const NoisyRun link = run_noisy(sc);
  for (const StepTruth& t : link.truth) {
    EXPECT_EQ(t.cause(), "comm");
    EXPECT_EQ(t.active[0].targets, (std::vector<std::string>{"rank:1", "rank:3"}));
  }
  const auto& rank1 = link.run.steps[2][1];
  for (const sp_event& e : rank1.ops) {
    if (e.kind == SP_OP_SEND) {
      EXPECT_EQ(e.peer, 3);
    }
  }
  NoisyScenario dp = scenario({{FaultKind::kSlowLink, 2, 2.0}});
  const NoisyRun coll = run_noisy(dp);
  for (const StepTruth& t : coll.truth) {
    EXPECT_EQ(t.cause(), "comm");
    EXPECT_TRUE(t.active[0].targets.empty());  // the members of a collective end together
    // The last bucket's transfer is on the critical path: 2x its 4 ms longer.
    EXPECT_NEAR(coll.run.step_time_s[static_cast<size_t>(t.step)] - coll.clean_step_time_s[static_cast<size_t>(t.step)],
                2.0 * dp.job.allreduce_s, 1e-6);
  }
}

TEST(NoisyJob, TwoFaultsAtOnceAreRankedByTheirOwnEffect) {
  // On one rank both count, the longer first; on two ranks a GC step is the pause's alone (the
  // slow rank's extra time is hidden while everyone waits for the pausing rank).
  for (int gc_rank : {0, 3}) {
    const NoisyRun run = run_noisy(scenario({{FaultKind::kSlowRank, 0, 0.1},
                                             {FaultKind::kGcPauses, gc_rank, 0, 0.06, 0, 4}}));
    for (const StepTruth& t : run.truth) {
      if (t.step % 4 == 0) {
        ASSERT_EQ(t.active.size(), gc_rank == 0 ? 2u : 1u) << t.step;
        EXPECT_EQ(t.active[0].cause, "gc");
        if (gc_rank == 0) {
          EXPECT_EQ(t.active[1].cause, "worker");
          EXPECT_GT(t.active[0].slowdown, t.active[1].slowdown);
        }
      } else {
        ASSERT_EQ(t.active.size(), 1u);
        EXPECT_EQ(t.cause(), "worker");
        EXPECT_NEAR(t.active[0].slowdown, t.measured_slowdown, 1e-12);
      }
    }
  }
}

TEST(NoisyJob, AFaultTooSmallToMeasureIsMarginalNotTruth) {
  const NoisyRun run = run_noisy(scenario({{FaultKind::kSlowRank, 1, 0.002}}));
  for (const StepTruth& t : run.truth) {
    EXPECT_TRUE(t.marginal);
    EXPECT_EQ(t.cause(), "none");
    EXPECT_GT(t.measured_slowdown, 1.0);
  }
}

// NoiseModel::fb_shift: each forward shows from a tenth to nearly twice its time, and what it
// gains its backward loses, so a micro-batch's forward and backward together take what they
// take unshifted (the last micro-batch's backward also waits for its buckets: left out).
TEST(NoisyJob, ShiftedWorkMovesBetweenForwardAndBackwardNotOutOfTheRank) {
  NoiseModel shifted = quiet();
  shifted.fb_shift = 0.9;
  NoisyScenario plain = scenario({}), moved = scenario({}, shifted);
  plain.job.microbatches = moved.job.microbatches = 4;
  const NoisyRun a = run_noisy(plain), b = run_noisy(moved);
  double widest = 0;
  for (size_t step = 0; step < a.run.steps.size(); ++step) {
    for (size_t r = 0; r < a.run.steps[step].size(); ++r) {
      for (int mb = 0; mb < 3; ++mb) {
        const auto& x = a.run.steps[step][r];
        const auto& y = b.run.steps[step][r];
        const double f0 = seconds(find_op(x, SP_OP_FORWARD, mb)), f1 = seconds(find_op(y, SP_OP_FORWARD, mb));
        EXPECT_NEAR(f0 + seconds(find_op(x, SP_OP_BACKWARD, mb)), f1 + seconds(find_op(y, SP_OP_BACKWARD, mb)), 2e-9);
        EXPECT_LE(std::fabs(f1 / f0 - 1), 0.9 + 1e-6);
        widest = std::max(widest, std::fabs(f1 / f0 - 1));
      }
    }
  }
  EXPECT_GT(widest, 0.6);  // the shares are drawn over the whole range
}

TEST(NoisyJob, BadScenariosAreRefused) {
  EXPECT_THROW(run_noisy(scenario({{FaultKind::kHeavyLastStage}})), std::invalid_argument);
  EXPECT_THROW(run_noisy(scenario({{FaultKind::kSlowRank, 4}})), std::invalid_argument);
  EXPECT_THROW(run_noisy(scenario({{FaultKind::kSlowRank, 0, 0.1, 0, 0, 0}})), std::invalid_argument);
}

}  // namespace
}  // namespace sp::online::testing
