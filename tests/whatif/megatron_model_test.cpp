// The Megatron dependency model on the ST reference trace: its shape, and one clear error for
// each way a trace can fail to fit it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/lane_model.h"
#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

struct StTrace {
  JobMeta meta;
  TraceTable table;
};

const StTrace& st_trace() {
  static const StTrace t = [] {
    const std::string dir = std::string(SP_WHATIF_TEST_DATA_DIR) + "/ST";
    StTrace s;
    s.meta = load_meta(dir + "/meta.yaml");
    s.table = load_trace_csv(dir + "/trace.csv.gz", s.meta);
    return s;
  }();
  return t;
}

TraceTable without_rows(const TraceTable& in, const auto& drop) {
  TraceTable out;
  for (size_t r = 0; r < in.size(); ++r) {
    if (drop(r)) continue;
    out.dp_rank.push_back(in.dp_rank[r]);
    out.stage.push_back(in.stage[r]);
    out.rank.push_back(in.rank[r]);
    out.step.push_back(in.step[r]);
    out.optype.push_back(in.optype[r]);
    out.start_ts.push_back(in.start_ts[r]);
    out.duration.push_back(in.duration[r]);
    out.seq_id.push_back(in.seq_id[r]);
    out.mc.push_back(in.mc[r]);
    out.mb_id.push_back(in.mb_id[r]);
    out.gmc.push_back(in.gmc[r]);
  }
  return out;
}

std::string model_error(const TraceTable& t, const JobMeta& meta) {
  try {
    (void)build_megatron_model(t, meta);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

TEST(MegatronModel, ShapeOfTheStageImbalanceTrace) {
  const auto& st = st_trace();
  const LaneModel m = build_megatron_model(st.table, st.meta);
  EXPECT_EQ(m.dp_size, 2);
  EXPECT_EQ(m.pp_size, 4);
  EXPECT_EQ(m.steps.size(), 32u);
  EXPECT_EQ(m.lanes.lanes_per_step, 2);
  EXPECT_EQ(m.num_cells(), st.table.size());
  // Every cell came from exactly one row.
  std::vector<int> seen(st.table.size(), 0);
  for (int64_t r : m.cell_row) ++seen[static_cast<size_t>(r)];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(seen.size()));
  // Comm groups: the optimizer sync spans all 4 stages and the replicas; embedding pairs the
  // first and last stage; p2p groups are pairs.
  const NodeId clip = m.graph.find("optimizer-clip-main-grad_0_0");
  ASSERT_GE(clip, 0);
  const CommGroup& g = m.graph.group(m.graph.node(clip).group);
  EXPECT_EQ(g.members.size(), 4u);
  EXPECT_TRUE(g.sync_across_lanes);
  const NodeId emb = m.graph.find("embedding-grads-all-reduce_0_3");
  ASSERT_GE(emb, 0);
  EXPECT_EQ(m.graph.group(m.graph.node(emb).group).members.size(), 2u);
  EXPECT_FALSE(m.graph.group(m.graph.node(emb).group).sync_across_lanes);
  const NodeId send = m.graph.find("forward-send_0_0");
  ASSERT_GE(send, 0);
  const auto& pair = m.graph.group(m.graph.node(send).group).members;
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ(m.graph.node(pair[0] == send ? pair[1] : pair[0]).name, "forward-recv_0_1");
  // The first backward's send/recv wait for the forward two computes before it.
  const NodeId bwd_send = m.graph.find("backward-send_0_1");
  ASSERT_GE(bwd_send, 0);
  bool waits_for_forward = false;
  for (NodeId d : m.graph.dependencies(bwd_send)) {
    waits_for_forward |= m.graph.node(d).name.rfind("forward-compute_", 0) == 0;
  }
  EXPECT_TRUE(waits_for_forward);
  // Launch delays are never <= -10 ms; transfer durations only on comm cells.
  for (size_t c = 0; c < m.num_cells(); ++c) {
    EXPECT_GT(m.launch_delay[c], -0.01f);
    const bool comm = m.graph.node(static_cast<NodeId>(c / m.lanes.num_lanes())).kind == NodeKind::kComm;
    EXPECT_EQ(std::isnan(m.transfer[c]), !comm);
  }
}

TEST(MegatronModel, AnOpMissingOnOneReplicaIsNamed) {
  const auto& st = st_trace();
  const TraceTable t = without_rows(st.table, [&](size_t r) {
    return st.table.rank[r] == 5 && st.table.step[r] == 259 &&
           st.table.optype[r] == OpType::kForwardCompute && st.table.seq_id[r] == 2;
  });
  const std::string msg = model_error(t, st.meta);
  EXPECT_NE(msg.find("forward-compute_2_2 is missing on rank 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("step 259"), std::string::npos) << msg;
}

TEST(MegatronModel, AnOpOutsideTheTemplateIsNamed) {
  const auto& st = st_trace();
  TraceTable t = st.table;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t.rank[r] == 3 && t.step[r] == 36 && t.optype[r] == OpType::kGc) t.seq_id[r] = 7;
  }
  const std::string msg = model_error(t, st.meta);
  EXPECT_NE(msg.find("op gc_7_1 on rank 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not occur on dp rank 0 in step 23"), std::string::npos) << msg;
}

TEST(MegatronModel, AMissingRequiredOpIsNamed) {
  const auto& st = st_trace();
  const TraceTable t = without_rows(st.table, [&](size_t r) { return st.table.optype[r] == OpType::kGc; });
  const std::string msg = model_error(t, st.meta);
  EXPECT_NE(msg.find("needs op gc_0_0"), std::string::npos) << msg;
}

TEST(MegatronModel, AStageWithoutAReplicaIsNamed) {
  const auto& st = st_trace();
  const TraceTable t = without_rows(st.table, [&](size_t r) { return st.table.rank[r] == 7; });
  const std::string msg = model_error(t, st.meta);
  EXPECT_NE(msg.find("no rank traces dp rank 1, stage 3"), std::string::npos) << msg;
}

TEST(Analysis, StepSelectionKeepsOnlyTracedSteps) {
  const auto& st = st_trace();
  AnalyzeOptions opts;
  opts.steps = std::vector<int64_t>{25, 23, 99999};
  Analysis a(st.table, st.meta, opts);
  EXPECT_EQ(a.result().steps, (std::vector<int64_t>{23, 25}));
  ASSERT_EQ(a.result().step_t_base.size(), 2u);
  // Rows of other steps have no ideal times.
  size_t analysed = 0;
  for (uint8_t x : a.result().row_analysed) analysed += x;
  EXPECT_EQ(analysed * 16, st.table.size());
  opts.steps = std::vector<int64_t>{1, 2};
  EXPECT_THROW(Analysis(st.table, st.meta, opts), ModelError);
}

TEST(Analysis, RowTimesAndWorkerGrid) {
  const auto& st = st_trace();
  Analysis a(st.table, st.meta);
  const AnalysisResult& r = a.result();
  ASSERT_EQ(r.row_real_start.size(), st.table.size());
  for (size_t i = 0; i < st.table.size(); ++i) {
    EXPECT_EQ(r.row_analysed[i], 1);
    EXPECT_LE(r.row_real_start[i], r.row_real_end[i]);
    EXPECT_LE(r.row_ideal_start[i], r.row_ideal_end[i]);
    EXPECT_GE(r.row_ideal_start[i], 0.0);
  }
  // S_w = min(S of the dp rank, S of the stage): the last stage's workers carry it.
  ASSERT_EQ(r.worker_slowdown.size(), 8u);
  const double s_dp1 = 1.1778704237064905, s_stage3 = 1.2322559543157936;
  EXPECT_NEAR(r.worker_slowdown[3 * 2 + 1], std::min(s_dp1, s_stage3), 1e-12);
  const auto mw = a.compute_mw();
  ASSERT_TRUE(mw.has_value());
  EXPECT_EQ(mw->fixed_ranks, std::vector<int32_t>{7});
  EXPECT_EQ(a.compute_ms().fixed_stages, std::vector<int32_t>{3});
}

}  // namespace
}  // namespace sp::whatif
