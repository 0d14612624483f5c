// The verdict rules, on inputs shaped like the reference cases, and the overview text.
#include <gtest/gtest.h>

#include <string>

#include "straggler_probe/whatif/report_overview.h"

namespace sp::whatif {
namespace {

// ST: last stage slow, every dp rank equally affected.
OverviewInput st_like() {
  OverviewInput in;
  in.trial_name = "ST";
  in.steps = 32;
  in.slowdown = 1.1787;
  in.launch_slowdown = 1.0192;
  in.pp_size = 4;
  in.by_stage = {{"3", 1.2323}, {"0", 0.998}, {"1", 0.983}, {"2", 0.982}};
  in.by_dp_rank = {{"1", 1.1779}, {"0", 1.1731}};
  in.by_optype = {{"forward-compute", 1.0875}, {"backward-compute", 1.0742}, {"gc", 1.0}};
  in.m_s = 1.2194;
  in.m_w = 0.0314;
  return in;
}

// SE: both stages slow, no dp rank stands out, compute-bound.
OverviewInput se_like() {
  OverviewInput in;
  in.trial_name = "SE";
  in.steps = 43;
  in.slowdown = 1.5374;
  in.pp_size = 2;
  in.by_stage = {{"1", 1.4354}, {"0", 1.1678}};
  in.by_dp_rank = {{"8", 1.2045}, {"27", 1.19}};
  in.by_optype = {{"backward-compute", 1.4128}, {"forward-compute", 1.146}};
  in.m_s = 0.6877;
  in.m_w = 0.0251;
  return in;
}

TEST(Verdict, LastStage) {
  EXPECT_EQ(derive_verdict(st_like()), "last pipeline stage is the bottleneck (M_S=1.22): rebalance the stage partitioning");
}

TEST(Verdict, SequenceLengthImbalance) {
  EXPECT_EQ(derive_verdict(se_like()),
            "stragglers are spread across workers and steps: suspect sequence-length imbalance (M_W=0.03); "
            "the last stage adds to it (M_S=0.69)");
}

// Few data-parallel ranks: one of them can explain over half the slowdown by chance, but the
// worst rank changes from step to step.
TEST(Verdict, MovingWorstRankIsStillImbalance) {
  OverviewInput in = se_like();
  in.by_dp_rank = {{"1", 1.6}, {"4", 1.5}};  // rank 1 explains 1.6-1 / 0.5374 > 100%
  in.per_step_worst_dp_rank = {"7", "6", "4", "1", "1", "4"};
  EXPECT_EQ(derive_verdict(in).rfind("stragglers are spread across workers and steps", 0), 0u) << derive_verdict(in);
}

TEST(Verdict, ConsistentlySlowDpRank) {
  OverviewInput in = se_like();
  in.by_dp_rank = {{"3", 1.4}, {"4", 1.05}};  // 74% of the slowdown
  in.per_step_worst_dp_rank = {"3", "3", "3", "1", "3"};
  EXPECT_EQ(derive_verdict(in),
            "dp rank 3 is the bottleneck in most steps (it explains 74% of the slowdown): suspect its machines or "
            "their network");
}

TEST(Verdict, FewWorkers) {
  OverviewInput in = se_like();
  in.m_w = 0.93;
  in.worst_worker_dp = 8;
  in.worst_worker_stage = 1;
  EXPECT_EQ(derive_verdict(in), "a few workers are the bottleneck (M_W=0.93): worst is dp rank 8, stage 1");
}

TEST(Verdict, NoStraggling) {
  OverviewInput in = st_like();
  in.slowdown = 1.05;
  EXPECT_EQ(derive_verdict(in), "no significant straggling (S=1.050 < 1.10)");
}

TEST(Verdict, Communication) {
  OverviewInput in = se_like();
  in.m_s = 0.1;
  in.by_optype = {{"grads-reduce-scatter", 1.3}, {"forward-compute", 1.05}};
  in.by_dp_rank = {{"3", 1.2}};  // explains 37%: no single rank to blame
  EXPECT_EQ(derive_verdict(in),
            "communication is the main contributor: grads-reduce-scatter (S_t=1.300), suspect the network");
}

TEST(Overview, ListsTheNumbersAPersonNeeds) {
  const std::string s = format_overview(st_like());
  EXPECT_NE(s.find("slowdown S        1.1787  (waste 15.2% of GPU time"), std::string::npos) << s;
  EXPECT_NE(s.find("worst stage       stage 3  (S=1.2323)"), std::string::npos) << s;
  EXPECT_NE(s.find("worst dp rank     dp rank 1  (S=1.1779)"), std::string::npos) << s;
  EXPECT_NE(s.find("worst op type     forward-compute  (S=1.0875)"), std::string::npos) << s;
  EXPECT_NE(s.find("M_S               1.2194"), std::string::npos) << s;
  EXPECT_NE(s.find("M_W               0.0314"), std::string::npos) << s;
  EXPECT_NE(s.find("verdict           last pipeline stage is the bottleneck"), std::string::npos) << s;
}

}  // namespace
}  // namespace sp::whatif
