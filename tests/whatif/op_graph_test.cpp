// Graph construction rules and the cycle error message.
#include <gtest/gtest.h>

#include <string>

#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/simulator.h"

namespace sp::whatif {
namespace {

std::string error_of(const OpGraph& g) {
  try {
    g.validate();
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

TEST(OpGraph, CycleMessageNamesTheOpsInDependencyOrder) {
  OpGraph g;
  const NodeId a = g.add_node("fwd_0", NodeKind::kCompute);
  const NodeId b = g.add_node("fwd_1", NodeKind::kCompute);
  const NodeId c = g.add_node("bwd_0", NodeKind::kCompute);
  g.add_node("unrelated", NodeKind::kCompute);
  g.add_dependency(b, a);
  g.add_dependency(c, b);
  g.add_dependency(a, c);
  const std::string msg = error_of(g);
  EXPECT_NE(msg.find("dependency cycle: "), std::string::npos) << msg;
  // Any rotation of the cycle, each op followed by one that waits for it.
  const bool ok = msg.find("fwd_0 -> fwd_1 -> bwd_0 -> fwd_0") != std::string::npos ||
                  msg.find("fwd_1 -> bwd_0 -> fwd_0 -> fwd_1") != std::string::npos ||
                  msg.find("bwd_0 -> fwd_0 -> fwd_1 -> bwd_0") != std::string::npos;
  EXPECT_TRUE(ok) << msg;
  EXPECT_EQ(msg.find("unrelated"), std::string::npos) << msg;
  EXPECT_THROW(Simulator(g, LaneLayout{}), GraphError);
}

TEST(OpGraph, CycleThroughACommGroupShowsTheGroup) {
  // send waits for x; x waits for recv; send and recv form one group: a deadlock.
  OpGraph g;
  const NodeId x = g.add_node("x", NodeKind::kCompute);
  const NodeId s = g.add_node("send", NodeKind::kComm);
  const NodeId r = g.add_node("recv", NodeKind::kComm);
  g.add_dependency(s, x);
  g.add_dependency(x, r);
  const NodeId pair[] = {s, r};
  g.add_comm_group(pair, false);
  const std::string msg = error_of(g);
  EXPECT_NE(msg.find("{send, recv}"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x"), std::string::npos) << msg;
}

TEST(OpGraph, AcyclicGraphValidates) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId b = g.add_node("b", NodeKind::kComm);
  g.add_dependency(b, a);
  g.add_dependency(b, a);  // repeated edge kept once
  EXPECT_EQ(g.dependencies(b).size(), 1u);
  const NodeId members[] = {b};
  g.add_comm_group(members, true);
  EXPECT_EQ(error_of(g), "");
  EXPECT_EQ(g.find("b"), b);
  EXPECT_EQ(g.find("zzz"), -1);
}

TEST(OpGraph, RejectsMisuse) {
  OpGraph g;
  const NodeId a = g.add_node("a", NodeKind::kCompute);
  const NodeId c = g.add_node("c", NodeKind::kComm);
  EXPECT_THROW(g.add_node("a", NodeKind::kCompute), GraphError);
  const NodeId compute_only[] = {a};
  EXPECT_THROW(g.add_comm_group(compute_only, false), GraphError);
  EXPECT_NE(error_of(g).find("'c' has no communication group"), std::string::npos);
  const NodeId members[] = {c};
  g.add_comm_group(members, false);
  EXPECT_THROW(g.add_comm_group(members, false), GraphError);
  EXPECT_THROW(g.add_dependency(a, 7), GraphError);
}

}  // namespace
}  // namespace sp::whatif
