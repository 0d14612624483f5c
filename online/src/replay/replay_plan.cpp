#include "replay_plan.h"

#include <span>
#include <string>

#include "straggler_probe/whatif/op_graph.h"

namespace sp::online {
namespace {

using Scratch = ReplayPlan::Scratch;

// The engine's graph of the step, built only to word the error when the plan finds no replay
// order: its validate() names the nodes on the cycle (or the comm node without a group).
[[noreturn]] void throw_engine_error(const StepModel& m) {
  whatif::OpGraph graph;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    const int32_t label = n.logical >= 0 ? m.ops[static_cast<size_t>(n.logical)].type : -1;
    std::string name = "r";
    name += std::to_string(n.rank);
    name += '.';
    name += std::to_string(i);
    graph.add_node(std::move(name), n.role == NodeRole::kComm ? whatif::NodeKind::kComm : whatif::NodeKind::kCompute,
                   label, n.rank, n.role == NodeRole::kMarker);
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    for (int d : m.nodes[i].deps) graph.add_dependency(static_cast<whatif::NodeId>(i), d);
  }
  for (const auto& g : m.groups) graph.add_comm_group(std::span<const int>(g), false);
  graph.validate();
  throw whatif::GraphError("the step's dependencies have a cycle");
}

// Prefix sums of counts[1..n] in place: counts becomes the CSR begin offsets.
void prefix_sum(std::vector<int32_t>& counts) {
  for (size_t i = 1; i < counts.size(); ++i) counts[i] += counts[i - 1];
}

// Every node's dependencies into one flat array (each node's list is read once: they are
// separate heap blocks), and the units: one per compute node, step start and end, one per
// group; numbered by first appearance in node order, with their members as a CSR.
size_t flatten_and_number(const StepModel& m, Scratch& s) {
  const size_t n = m.nodes.size();
  // Sized, then written through: every entry is set below (a range insert per node cost a
  // call and a copy loop each).
  s.node_dep_begin.resize(n + 1);
  s.node_dep_begin[0] = 0;
  size_t total = 0;
  for (const Node& node : m.nodes) total += node.deps.size();
  s.node_deps.resize(total);
  int32_t* flat = s.node_deps.data();
  s.unit_of_node.assign(n, -1);
  size_t units = 0;
  for (size_t v = 0; v < n; ++v) {
    const Node& node = m.nodes[v];
    for (int d : node.deps) *flat++ = d;
    s.node_dep_begin[v + 1] = static_cast<int32_t>(flat - s.node_deps.data());
    if (node.role == NodeRole::kComm && node.group < 0) throw_engine_error(m);
    if (s.unit_of_node[v] >= 0) continue;
    const auto id = static_cast<int32_t>(units++);
    if (node.role != NodeRole::kComm) {
      s.unit_of_node[v] = id;
      continue;
    }
    for (int member : m.groups[static_cast<size_t>(node.group)]) s.unit_of_node[static_cast<size_t>(member)] = id;
  }
  s.members_begin.assign(units + 1, 0);
  for (size_t v = 0; v < n; ++v) ++s.members_begin[static_cast<size_t>(s.unit_of_node[v]) + 1];
  prefix_sum(s.members_begin);
  s.members.resize(n);  // each entry written once below
  s.fill.assign(s.members_begin.begin(), s.members_begin.end() - 1);
  for (size_t v = 0; v < n; ++v) s.members[static_cast<size_t>(s.fill[static_cast<size_t>(s.unit_of_node[v])]++)] = static_cast<int32_t>(v);
  return units;
}

// A replay order of the units (Kahn's algorithm over the edges between units, first in first
// out: the order interleaves the ranks level by level, so that a node's dependencies lie a
// few thousand positions back at most, in cache) into s.order.
void order_units(const StepModel& m, size_t units, Scratch& s) {
  const size_t n = m.nodes.size();
  s.indegree.assign(units, 0);
  s.out_begin.assign(units + 1, 0);
  for (size_t v = 0; v < n; ++v) {
    const int32_t to = s.unit_of_node[v];
    for (int32_t k = s.node_dep_begin[v]; k < s.node_dep_begin[v + 1]; ++k) {
      const int32_t from = s.unit_of_node[static_cast<size_t>(s.node_deps[static_cast<size_t>(k)])];
      if (from == to) throw_engine_error(m);  // a member waiting for its own group
      ++s.out_begin[static_cast<size_t>(from) + 1];
      ++s.indegree[static_cast<size_t>(to)];
    }
  }
  prefix_sum(s.out_begin);
  s.out.resize(static_cast<size_t>(s.out_begin[units]));
  s.fill.assign(s.out_begin.begin(), s.out_begin.end() - 1);
  for (size_t v = 0; v < n; ++v) {
    for (int32_t k = s.node_dep_begin[v]; k < s.node_dep_begin[v + 1]; ++k) {
      const auto from = static_cast<size_t>(s.unit_of_node[static_cast<size_t>(s.node_deps[static_cast<size_t>(k)])]);
      s.out[static_cast<size_t>(s.fill[from]++)] = s.unit_of_node[v];
    }
  }
  s.order.clear();
  for (size_t u = 0; u < units; ++u) {
    if (s.indegree[u] == 0) s.order.push_back(static_cast<int32_t>(u));
  }
  for (size_t head = 0; head < s.order.size(); ++head) {
    const auto u = static_cast<size_t>(s.order[head]);
    for (int32_t e = s.out_begin[u]; e < s.out_begin[u + 1]; ++e) {
      const int32_t next = s.out[static_cast<size_t>(e)];
      if (--s.indegree[static_cast<size_t>(next)] == 0) s.order.push_back(next);
    }
  }
  if (s.order.size() != units) throw_engine_error(m);
}

}  // namespace

void build_replay_plan(const StepModel& m, ReplayPlan* plan) {
  ReplayPlan& p = *plan;
  Scratch& s = p.scratch;
  const size_t n = m.nodes.size();
  const size_t units = flatten_and_number(m, s);
  order_units(m, units, s);

  p.position_of.resize(n);
  p.unit_begin.assign(1, 0);
  p.node_at.clear();
  p.unit_of.clear();
  for (int32_t u : s.order) {
    for (int32_t k = s.members_begin[static_cast<size_t>(u)]; k < s.members_begin[static_cast<size_t>(u) + 1]; ++k) {
      const int32_t v = s.members[static_cast<size_t>(k)];
      p.position_of[static_cast<size_t>(v)] = static_cast<int32_t>(p.node_at.size());
      p.unit_of.push_back(static_cast<int32_t>(p.unit_begin.size() - 1));
      p.node_at.push_back(v);
    }
    p.unit_begin.push_back(static_cast<int32_t>(p.node_at.size()));
  }
  // Dependencies and ranks by position, the nodes read in their own order.
  p.dep_begin.resize(n + 1);  // positions are a permutation of the nodes: each entry written
  p.dep_begin[0] = 0;
  p.rank_at.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const auto pos = static_cast<size_t>(p.position_of[v]);
    p.dep_begin[pos + 1] = s.node_dep_begin[v + 1] - s.node_dep_begin[v];
    p.rank_at[pos] = m.nodes[v].rank;
  }
  prefix_sum(p.dep_begin);
  p.deps.resize(static_cast<size_t>(p.dep_begin[n]));
  for (size_t v = 0; v < n; ++v) {
    int32_t* out = p.deps.data() + p.dep_begin[static_cast<size_t>(p.position_of[v])];
    for (int32_t k = s.node_dep_begin[v]; k < s.node_dep_begin[v + 1]; ++k) {
      *out++ = p.position_of[static_cast<size_t>(s.node_deps[static_cast<size_t>(k)])];
    }
  }
  p.start_at.resize(static_cast<size_t>(m.world));
  p.marker_at.resize(static_cast<size_t>(m.world));
  for (size_t r = 0; r < static_cast<size_t>(m.world); ++r) {
    p.start_at[r] = p.position_of[static_cast<size_t>(m.starts[r])];
    p.marker_at[r] = p.position_of[static_cast<size_t>(m.markers[r])];
  }
}

}  // namespace sp::online
