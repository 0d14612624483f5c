// End to end: stragglers planted by the generator are found by the what-if analysis, a clean
// job shows no slowdown, and every generated trace replays to its own step times (so the
// generator's timeline agrees with the engine's dependency model).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/synthetic_trace.h"

namespace sp::whatif {
namespace {

// 16 traced workers, so M_W fixes exactly one (ceil(3% of 16)).
SyntheticJobSpec job(int vpp = 1, bool overlap = false) {
  SyntheticJobSpec spec;
  spec.dp_size = 4;
  spec.pp_size = 4;
  spec.vpp_size = vpp;
  spec.micro_batches = 8;
  spec.steps = 6;
  spec.overlap_grad_reduce = overlap;
  spec.seed = 11;
  return spec;
}

const std::string& top_key(const std::optional<Decomposition>& d) {
  static const std::string none = "<not computed>";
  return d && !d->overall.empty() ? d->overall.front().key : none;
}

void expect_slow_worker_found(const SyntheticJobSpec& base) {
  SyntheticJobSpec spec = base;
  spec.slow_workers.push_back({2, 1, 1.3});
  const SyntheticTrace trace = generate_synthetic_trace(spec);
  Analysis analysis(trace.table, trace.meta);
  const AnalysisResult& r = analysis.result();
  EXPECT_GT(r.blocking_slowdown, 1.1);
  EXPECT_EQ(top_key(r.blocking_by_dp_rank), "2");
  EXPECT_EQ(top_key(r.blocking_by_stage), "1");
  const auto mw = analysis.compute_mw();
  ASSERT_TRUE(mw.has_value());
  EXPECT_GE(mw->rem, 0.8);
  ASSERT_EQ(mw->fixed_ranks.size(), 1U);
  EXPECT_EQ(mw->fixed_ranks[0], synthetic_global_rank(trace.meta, 2, 1));
}

TEST(PlantedStragglers, SlowRankGivesMwNearOneAndTopsTheAttribution) {
  expect_slow_worker_found(job());
}

TEST(PlantedStragglers, SlowRankIsFoundWithInterleavingAndOverlappedGradReduce) {
  expect_slow_worker_found(job(2, true));
}

TEST(PlantedStragglers, HeavyLastStageGivesMsNearOne) {
  SyntheticJobSpec spec = job();
  spec.slow_stages.push_back({3, 1.5});
  const SyntheticTrace trace = generate_synthetic_trace(spec);
  Analysis analysis(trace.table, trace.meta);
  const AnalysisResult& r = analysis.result();
  EXPECT_GT(r.blocking_slowdown, 1.1);
  EXPECT_EQ(top_key(r.blocking_by_stage), "3");
  EXPECT_GE(analysis.compute_ms().rem, 0.8);
}

TEST(PlantedStragglers, CleanJobHasSlowdownNearOne) {
  for (const auto& spec : {job(), job(2, true)}) {
    const SyntheticTrace trace = generate_synthetic_trace(spec);
    const AnalysisResult r = analyze(trace.table, trace.meta);
    EXPECT_GE(r.blocking_slowdown, 1.0);
    EXPECT_LT(r.blocking_slowdown, 1.03);  // below the default attribution threshold
    EXPECT_FALSE(r.blocking_by_dp_rank.has_value());
  }
}

// The engine replays the trace with its real durations and no launch delays. The generator's
// only waits outside the analysis's model are its small launch gaps and, in plain 1F1B, the
// blocking batched send+recv calls (both records end when the slower transfer does), so the
// replay must land within 1% of the traced step times.
TEST(PlantedStragglers, GeneratedTracesReplayToTheirOwnStepTimes) {
  for (auto spec : {job(), job(2, true), job(3, false)}) {
    spec.slow_workers.push_back({1, 2, 1.2});
    spec.seqlen_sigma = 0.3;
    const SyntheticTrace trace = generate_synthetic_trace(spec);
    const AnalysisResult r = analyze(trace.table, trace.meta);
    ASSERT_EQ(r.step_t_base.size(), r.step_t_nodelay.size());
    for (size_t i = 0; i < r.step_t_base.size(); ++i) {
      EXPECT_NEAR(r.step_t_nodelay[i].value / r.step_t_base[i].value, 1.0, 0.01)
          << "vpp=" << spec.vpp_size << " step " << r.step_t_base[i].step;
    }
  }
}

}  // namespace
}  // namespace sp::whatif
