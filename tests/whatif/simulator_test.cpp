// The simulator on small hand-built graphs: every rule of the replay, checked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/simulator.h"

namespace sp::whatif {
namespace {

// Cell value of node v in lane l.
double at(std::span<const double> cells, size_t num_lanes, NodeId v, size_t l) {
  return cells[static_cast<size_t>(v) * num_lanes + l];
}

TEST(Simulator, ComputeChainAddsDurations) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kCompute);
  const NodeId c = g.add_node("c", NodeKind::kCompute, -1, -1, /*ends_step=*/true);
  g.add_dependency(b, a);
  g.add_dependency(c, b);
  Simulator sim(g, LaneLayout{1, 1});
  const std::vector<double> work = {1.0, 2.0, 4.0};
  SimInput in;
  in.work = work;
  in.want_span = true;
  const SimResult r = sim.run(in);
  EXPECT_EQ(at(r.start, 1, b, 0), 1.0);
  EXPECT_EQ(at(r.start, 1, c, 0), 3.0);
  EXPECT_EQ(at(r.end, 1, c, 0), 7.0);
  EXPECT_EQ(r.step_end[0], 7.0);
  EXPECT_EQ(r.span_start[0], 0.0);
  EXPECT_EQ(r.span_end[0], 7.0);
}

TEST(Simulator, NodeStartsAfterItsLatestDependency) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kCompute);
  const NodeId c = g.add_node("c", NodeKind::kCompute);
  g.add_dependency(c, a);
  g.add_dependency(c, b);
  Simulator sim(g, LaneLayout{1, 2});
  // Lane 0: a is longer; lane 1: b is longer.
  const std::vector<double> work = {5.0, 1.0, /*b*/ 2.0, 3.0, /*c*/ 1.0, 1.0};
  SimInput in;
  in.work = work;
  const SimResult r = sim.run(in);
  EXPECT_EQ(at(r.start, 2, c, 0), 5.0);
  EXPECT_EQ(at(r.start, 2, c, 1), 3.0);
}

TEST(Simulator, CommGroupEndsAtLatestStartPlusOwnTransfer) {
  // Two ranks: x0 -> s0 (send) and x1 -> r1 (recv) paired; y1 after r1.
  OpGraph g;
  const NodeId x0 = g.add_node("x0", NodeKind::kCompute);
  const NodeId x1 = g.add_node("x1", NodeKind::kCompute);
  const NodeId s0 = g.add_node("s0", NodeKind::kComm);
  const NodeId r1 = g.add_node("r1", NodeKind::kComm);
  const NodeId y1 = g.add_node("y1", NodeKind::kCompute);
  g.add_dependency(s0, x0);
  g.add_dependency(r1, x1);
  g.add_dependency(y1, r1);
  const NodeId pair[] = {s0, r1};
  g.add_comm_group(pair, false);
  Simulator sim(g, LaneLayout{1, 1});
  const std::vector<double> work = {3.0, 1.0, 0.5, 0.25, 2.0};
  SimInput in;
  in.work = work;
  const SimResult r = sim.run(in);
  EXPECT_EQ(at(r.start, 1, s0, 0), 3.0);
  EXPECT_EQ(at(r.start, 1, r1, 0), 1.0);
  // Both end at max(3, 1) + their own transfer time.
  EXPECT_EQ(at(r.end, 1, s0, 0), 3.5);
  EXPECT_EQ(at(r.end, 1, r1, 0), 3.25);
  EXPECT_EQ(at(r.start, 1, y1, 0), 3.25);
}

TEST(Simulator, SyncAcrossLanesTakesTheStepsLatestStartOnly) {
  OpGraph g;
  const NodeId x = g.add_node("x", NodeKind::kCompute);
  const NodeId ar = g.add_node("allreduce", NodeKind::kComm, -1, -1, true);
  g.add_dependency(ar, x);
  const NodeId members[] = {ar};
  g.add_comm_group(members, /*sync_across_lanes=*/true);
  // 2 steps x 3 replicas.
  Simulator sim(g, LaneLayout{2, 3});
  const std::vector<double> work = {1, 4, 2, /*step 1*/ 7, 1, 1,
                                    /*allreduce*/ 0.5, 0.5, 0.5, 1, 1, 1};
  SimInput in;
  in.work = work;
  const SimResult r = sim.run(in);
  for (size_t l = 0; l < 3; ++l) EXPECT_EQ(at(r.end, 6, ar, l), 4.5);
  for (size_t l = 3; l < 6; ++l) EXPECT_EQ(at(r.end, 6, ar, l), 8.0);
  EXPECT_EQ(r.step_end[0], 4.5);
  EXPECT_EQ(r.step_end[1], 8.0);
}

TEST(Simulator, WithoutSyncEachLaneIsIndependent) {
  OpGraph g;
  const NodeId x = g.add_node("x", NodeKind::kCompute);
  const NodeId c = g.add_node("c", NodeKind::kComm);
  g.add_dependency(c, x);
  const NodeId members[] = {c};
  g.add_comm_group(members, false);
  Simulator sim(g, LaneLayout{1, 2});
  const std::vector<double> work = {1, 4, 0.5, 0.5};
  SimInput in;
  in.work = work;
  const SimResult r = sim.run(in);
  EXPECT_EQ(at(r.end, 2, c, 0), 1.5);
  EXPECT_EQ(at(r.end, 2, c, 1), 4.5);
}

TEST(Simulator, LaunchDelaysAndStepStarts) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kCompute, -1, -1, true);
  g.add_dependency(b, a);
  Simulator sim(g, LaneLayout{2, 1});
  const std::vector<double> work = {1, 1, 1, 1};
  const std::vector<double> delay = {0.5, 0.25, 2, 3};
  const std::vector<double> step_start = {10, 20};
  SimInput in;
  in.work = work;
  in.launch_delay = delay;
  in.step_start = step_start;
  const SimResult r = sim.run(in);
  // A source starts at step start + its delay; others at their dependency's end + delay.
  EXPECT_EQ(at(r.start, 2, a, 0), 10.5);
  EXPECT_EQ(at(r.start, 2, a, 1), 20.25);
  EXPECT_EQ(at(r.start, 2, b, 0), 13.5);
  EXPECT_EQ(at(r.start, 2, b, 1), 24.25);
  EXPECT_EQ(r.step_end[0], 14.5);
  EXPECT_EQ(r.step_end[1], 25.25);
}

TEST(Simulator, OverlayReplacesOnlySelectedCells) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kCompute, -1, -1, true);
  g.add_dependency(b, a);
  Simulator sim(g, LaneLayout{1, 2});
  const std::vector<double> base = {1, 1, 1, 1};
  const std::vector<double> real = {5, 6, 7, 8};
  const std::vector<uint8_t> node_mask = {0, 1};
  const std::vector<uint8_t> lane_mask = {0, 1};
  SimOverlay ov;
  ov.work = real;
  ov.node_mask = node_mask;
  ov.lane_mask = lane_mask;
  SimInput in;
  in.work = base;
  in.overlay = &ov;
  const SimResult r = sim.run(in);
  EXPECT_EQ(at(r.end, 2, b, 0), 2.0);   // not selected
  EXPECT_EQ(at(r.end, 2, b, 1), 9.0);   // 1 + 8
  // Cell mask: only (a, lane 0).
  const std::vector<uint8_t> cells = {1, 0, 0, 0};
  SimOverlay ov2;
  ov2.work = real;
  ov2.cell_mask = cells;
  in.overlay = &ov2;
  const SimResult r2 = sim.run(in);
  EXPECT_EQ(at(r2.end, 2, b, 0), 6.0);
  EXPECT_EQ(at(r2.end, 2, b, 1), 2.0);
}

TEST(Simulator, LaneSubsetGivesTheSameStepResults) {
  // Replicas 1..3 have identical inputs: replaying lanes {0, 1} is enough.
  OpGraph g;
  const NodeId x = g.add_node("x", NodeKind::kCompute);
  const NodeId ar = g.add_node("ar", NodeKind::kComm);
  const NodeId opt = g.add_node("opt", NodeKind::kCompute, -1, -1, true);
  g.add_dependency(ar, x);
  g.add_dependency(opt, ar);
  const NodeId members[] = {ar};
  g.add_comm_group(members, true);
  Simulator sim(g, LaneLayout{2, 4});
  std::vector<double> work = {3, 1, 1, 1, 2, 1, 1, 1, /*ar*/ 1, 1, 1, 1, 1, 1, 1, 1,
                              /*opt*/ 1, 2, 2, 2, 1, 2, 2, 2};
  SimInput in;
  in.work = work;
  in.want_span = true;
  const SimResult full = sim.run(in);
  const std::vector<double> full_end(full.step_end.begin(), full.step_end.end());
  const std::vector<double> full_span(full.span_end.begin(), full.span_end.end());
  const std::vector<uint32_t> subset = {0, 1, 4, 5};
  in.lanes = subset;
  in.want_cells = false;
  const SimResult part = sim.run(in);
  EXPECT_TRUE(part.start.empty());
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(part.step_end[s], full_end[s]);
    EXPECT_EQ(part.span_end[s], full_span[s]);
  }
  EXPECT_EQ(full_end[0], 3 + 1 + 2.0);
}

TEST(Simulator, RepeatedRunsGiveIdenticalResults) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kCompute, -1, -1, true);
  g.add_dependency(b, a);
  Simulator sim(g, LaneLayout{3, 2});
  std::vector<double> work(12);
  for (size_t i = 0; i < work.size(); ++i) work[i] = 0.1 * static_cast<double>(i + 1);
  SimInput in;
  in.work = work;
  const SimResult once = sim.run(in);
  const std::vector<double> first(once.end.begin(), once.end.end());
  const SimResult again = sim.run(in);
  EXPECT_EQ(first, std::vector<double>(again.end.begin(), again.end.end()));
}

TEST(Simulator, RejectsInputsOfTheWrongSize) {
  OpGraph g;
  g.add_node("a", NodeKind::kCompute);
  Simulator sim(g, LaneLayout{1, 2});
  const std::vector<double> work = {1.0};
  SimInput in;
  in.work = work;
  EXPECT_THROW(sim.run(in), std::invalid_argument);
}

}  // namespace
}  // namespace sp::whatif
