// The ideal window's persistent-outlier guard with sequence lengths known: durations are
// compared per unit of fitted work, so that a rank with longer sequences keeps its work in the
// mean and a rank slow for its work is still left out.
#include <gtest/gtest.h>

#include "ideal/ideal_window.h"
#include "ideal/outlier_guard.h"

namespace sp::online {
namespace {

// The synthetic jobs' cost model (tests/online/noisy_job.cpp): len + len^2 / 1024 per sequence.
double cost(double len) { return 1e-3 * (len + len * len / 1024.0); }

// One forward op per rank (micro-batch 0) of one sequence of the given length, 2 stages of 2
// ranks; `slow`: per rank, a factor on its duration; `annotate`: the seq_lens costs are known.
StepModel model_with(const std::vector<double>& lens, const std::vector<double>& slow, bool annotate) {
  StepModel m;
  m.world = static_cast<int>(lens.size());
  m.rank_stage = {0, 0, 1, 1};
  m.rank_dp = {0, 1, 0, 1};
  m.ideal_keys = {"forward-compute"};
  m.delay_keys = {"step-end"};
  for (int r = 0; r < m.world; ++r) {
    const auto i = static_cast<size_t>(r);
    const double d = cost(lens[i]) * slow[i];
    m.ops.push_back({r, SP_OP_FORWARD, 0, 0, 0, IdealRule::kMean, 0, 0, d, d, -1});
    if (annotate) m.costs.push_back({r, 0, lens[i], lens[i] * lens[i]});
    Node marker;
    marker.role = NodeRole::kMarker;
    m.markers.push_back(static_cast<int>(m.nodes.size()));
    m.nodes.push_back(marker);
  }
  return m;
}

Ideals ideals_of(const StepModel& m) {
  IdealWindow w(IdealConfig{});
  w.push(collect_samples(m));
  return w.ideals(m);
}

TEST(OutlierGuard, TheWorkFitRecoversBothTermsOrTheBetterOne) {
  std::vector<WorkPoint> points;
  for (double len : {128.0, 300.0, 700.0, 2048.0}) points.push_back({2.0 * len + 0.5 * len * len, len, len * len});
  const WorkFit both = fit_work(points);
  EXPECT_NEAR(both.a, 2.0, 1e-9);
  EXPECT_NEAR(both.b, 0.5, 1e-12);
  // Every sequence of one length: len and len^2 are collinear; one term describes the work.
  const WorkFit one = fit_work({{3.0, 10, 100}, {6.0, 20, 200}, {9.0, 30, 300}});
  EXPECT_TRUE(one.usable());
  EXPECT_NEAR(one.work(40, 400), 12.0, 1e-9);
  EXPECT_FALSE(fit_work({{1.0, 1, 1}, {2.0, 2, 4}}).usable());  // too few points
}

TEST(OutlierGuard, ARankWithLongerSequencesKeepsItsWorkInTheMean) {
  // Rank 1's sequence is 3x rank 0's, so it takes ~4x as long. Per op it would be the stage's
  // outlier (the faster rank is the reference with 2 ranks); per unit of work it is not.
  const std::vector<double> lens = {100, 300, 200, 150}, same = {1, 1, 1, 1};
  const Ideals known = ideals_of(model_with(lens, same, true));
  EXPECT_TRUE(known.excluded_ranks.empty());
  double mean = 0;
  for (double len : lens) mean += cost(len) / 4;
  EXPECT_NEAR(known.duration[0], mean, 1e-12);
  // Without the lengths the same durations look like slow ranks: the longer sequence of each
  // stage (200 tokens against 150 is 36% more work).
  EXPECT_EQ(ideals_of(model_with(lens, same, false)).excluded_ranks, (std::vector<int>{1, 2}));
}

TEST(OutlierGuard, ARankSlowForItsWorkIsStillLeftOut) {
  // Over four steps every rank gets every length once (the fit then sees each length done at the
  // healthy speed too); rank 1 is 30% slow throughout.
  IdealWindow w(IdealConfig{});
  const std::vector<double> lens = {100, 300, 200, 150}, slow = {1, 1.3, 1, 1};
  StepModel m;
  for (size_t s = 0; s < lens.size(); ++s) {
    std::vector<double> rotated(lens.size());
    for (size_t r = 0; r < lens.size(); ++r) rotated[r] = lens[(r + s) % lens.size()];
    m = model_with(rotated, slow, true);
    m.step = static_cast<int64_t>(s);
    w.push(collect_samples(m));
  }
  EXPECT_EQ(w.ideals(m).excluded_ranks, std::vector<int>{1});
}

}  // namespace
}  // namespace sp::online
