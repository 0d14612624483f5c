// Ideal durations: mean for compute with the persistent-outlier guard, median for transfers,
// per-slot mean for pauses.
#include <gtest/gtest.h>

#include "ideal/ideal_window.h"

namespace sp::online {
namespace {

// A model with one forward op per rank of the given durations and one all-reduce transfer each.
StepModel model_with(const std::vector<double>& fwd, const std::vector<double>& transfer,
                     const std::vector<double>& gc, const std::vector<int>& stage) {
  StepModel m;
  m.world = static_cast<int>(fwd.size());
  m.rank_stage = stage;
  m.rank_dp.resize(fwd.size());
  m.ideal_keys = {"forward-compute", "all-reduce:b1", "gc"};
  m.delay_keys = {"d", "step-end"};
  m.marker_delay_key = 1;
  for (int r = 0; r < m.world; ++r) {
    const size_t i = static_cast<size_t>(r);
    m.ops.push_back({r, SP_OP_FORWARD, 0, 0, 0, IdealRule::kMean, 0, 0, fwd[i], fwd[i], -1});
    m.ops.push_back({r, SP_OP_COLLECTIVE, 0, 1, 0, IdealRule::kMedian, -1, 0, 0, transfer[i], -1});
    if (gc[i] > 0) m.ops.push_back({r, SP_OP_GC, 0, 2, 0, IdealRule::kSlotMean, -1, 0, 0, gc[i], -1});
    Node marker;
    marker.role = NodeRole::kMarker;
    m.markers.push_back(static_cast<int>(m.nodes.size()));
    m.nodes.push_back(marker);
  }
  return m;
}

TEST(OnlineIdealWindow, PersistentSlowWorkerIsLeftOutOfTheComputeMean) {
  IdealWindow w(IdealConfig{});
  const StepModel m = model_with({1.0, 1.0, 1.0, 1.3}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 0, 0});
  w.push(collect_samples(m));
  const Ideals ideal = w.ideals(m);
  EXPECT_NEAR(ideal.duration[0], 1.0, 1e-12);  // not 1.075
  EXPECT_EQ(ideal.excluded_ranks, std::vector<int>{3});
}

TEST(OnlineIdealWindow, WithoutTheGuardItIsThePapersMean) {
  IdealConfig cfg;
  cfg.exclude_outliers = false;
  IdealWindow w(cfg);
  const StepModel m = model_with({1.0, 1.0, 1.0, 1.3}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 0, 0});
  w.push(collect_samples(m));
  EXPECT_NEAR(w.ideals(m).duration[0], 1.075, 1e-12);
}

TEST(OnlineIdealWindow, AHeavierStageIsRebalancedNotExcluded) {
  // Two stages of two dp ranks each; stage 1 does twice the work. Workers are only compared
  // within their stage, so the ideal is the mean over both stages (1.5).
  IdealConfig cfg;
  cfg.outlier_min_workers = 2;
  IdealWindow w(cfg);
  const StepModel m = model_with({1.0, 1.0, 2.0, 2.0}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 1, 1});
  w.push(collect_samples(m));
  EXPECT_NEAR(w.ideals(m).duration[0], 1.5, 1e-12);
  EXPECT_TRUE(w.ideals(m).excluded_ranks.empty());
}

TEST(OnlineIdealWindow, WithTwoWorkersPerStageTheFasterOneIsTheReference) {
  // 2 stages x 2 dp ranks: no spread to test against. A 30% slower worker is left out; one 2%
  // slower (within the guard's 5% floor) is not.
  IdealWindow w(IdealConfig{});
  const StepModel slow = model_with({1.0, 1.3, 1.0, 1.0}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 1, 1});
  w.push(collect_samples(slow));
  EXPECT_NEAR(w.ideals(slow).duration[0], 1.0, 1e-12);
  EXPECT_EQ(w.ideals(slow).excluded_ranks, std::vector<int>{1});
  IdealWindow close(IdealConfig{});
  const StepModel near = model_with({1.0, 1.02, 1.0, 1.0}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 1, 1});
  close.push(collect_samples(near));
  EXPECT_NEAR(close.ideals(near).duration[0], 1.005, 1e-12);
  EXPECT_TRUE(close.ideals(near).excluded_ranks.empty());
}

TEST(OnlineIdealWindow, TransfersUseTheMedianAndPausesTheSlotMean) {
  IdealWindow w(IdealConfig{});
  const StepModel a = model_with({1, 1, 1, 1}, {0.1, 0.1, 0.1, 5.0}, {0, 0, 0.4, 0}, {0, 0, 0, 0});
  const StepModel b = model_with({1, 1, 1, 1}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 0, 0});
  w.push(collect_samples(a));
  w.push(collect_samples(b));
  const Ideals ideal = w.ideals(b);
  EXPECT_NEAR(ideal.duration[1], 0.1, 1e-12);      // a flapping link does not move the median
  EXPECT_NEAR(ideal.duration[2], 0.4 / 8, 1e-12);  // 0.4 s of gc over 8 rank-steps
}

TEST(OnlineIdealWindow, WindowForgetsOldSteps) {
  IdealConfig cfg;
  cfg.window_steps = 2;
  IdealWindow w(cfg);
  for (double f : {5.0, 1.0, 1.0}) {
    w.push(collect_samples(model_with({f, f, f, f}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 0, 0})));
  }
  const StepModel m = model_with({1, 1, 1, 1}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}, {0, 0, 0, 0});
  EXPECT_EQ(w.size(), 2u);
  EXPECT_NEAR(w.ideals(m).duration[0], 1.0, 1e-12);
}

}  // namespace
}  // namespace sp::online
