#include "graph_units.h"

#include <algorithm>
#include <string>

namespace sp::whatif {
namespace {

std::string unit_label(const OpGraph& g, int32_t unit, const std::vector<NodeId>& first_node,
                       const std::vector<GroupId>& unit_group) {
  if (unit_group[static_cast<size_t>(unit)] < 0) {
    return g.node(first_node[static_cast<size_t>(unit)]).name;
  }
  std::string s = "{";
  const auto& members = g.group(unit_group[static_cast<size_t>(unit)]).members;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) s += ", ";
    s += g.node(members[i]).name;
  }
  return s + "}";
}

}  // namespace

UnitSchedule schedule_units(const OpGraph& g) {
  const size_t n = g.num_nodes();
  // Unit ids: one per compute node, one per group (in node order of first appearance).
  std::vector<int32_t> unit_of(n, -1);
  std::vector<NodeId> first_node;
  std::vector<GroupId> unit_group;
  std::vector<int32_t> unit_of_group(g.num_groups(), -1);
  for (size_t v = 0; v < n; ++v) {
    const OpNode& node = g.node(static_cast<NodeId>(v));
    if (node.kind == NodeKind::kComm) {
      if (node.group < 0) {
        throw GraphError("communication node '" + node.name + "' has no communication group");
      }
      auto& u = unit_of_group[static_cast<size_t>(node.group)];
      if (u < 0) {
        u = static_cast<int32_t>(first_node.size());
        first_node.push_back(static_cast<NodeId>(v));
        unit_group.push_back(node.group);
      }
      unit_of[v] = u;
    } else {
      unit_of[v] = static_cast<int32_t>(first_node.size());
      first_node.push_back(static_cast<NodeId>(v));
      unit_group.push_back(-1);
    }
  }
  const size_t num_units = first_node.size();

  // Unit-level predecessor sets (deduplicated) and successor lists.
  std::vector<std::vector<int32_t>> preds(num_units);
  for (size_t v = 0; v < n; ++v) {
    auto& p = preds[static_cast<size_t>(unit_of[v])];
    for (NodeId d : g.dependencies(static_cast<NodeId>(v))) p.push_back(unit_of[static_cast<size_t>(d)]);
  }
  std::vector<std::vector<int32_t>> succs(num_units);
  std::vector<int32_t> indeg(num_units, 0);
  for (size_t u = 0; u < num_units; ++u) {
    auto& p = preds[u];
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    indeg[u] = static_cast<int32_t>(p.size());
    for (int32_t q : p) succs[static_cast<size_t>(q)].push_back(static_cast<int32_t>(u));
  }

  // Kahn's algorithm, FIFO like the artifact (the order does not change any value: a replay
  // only takes maxima and sums of already-final times).
  std::vector<int32_t> order;
  order.reserve(num_units);
  for (size_t u = 0; u < num_units; ++u) {
    if (indeg[u] == 0) order.push_back(static_cast<int32_t>(u));
  }
  for (size_t head = 0; head < order.size(); ++head) {
    for (int32_t s : succs[static_cast<size_t>(order[head])]) {
      if (--indeg[static_cast<size_t>(s)] == 0) order.push_back(s);
    }
  }

  if (order.size() != num_units) {
    // Every unit left over has a left-over predecessor: walk predecessors until one repeats.
    int32_t u = -1;
    for (size_t i = 0; i < num_units && u < 0; ++i) {
      if (indeg[i] > 0) u = static_cast<int32_t>(i);
    }
    std::vector<int32_t> pos(num_units, -1);
    std::vector<int32_t> path;
    while (pos[static_cast<size_t>(u)] < 0) {
      pos[static_cast<size_t>(u)] = static_cast<int32_t>(path.size());
      path.push_back(u);
      for (int32_t q : preds[static_cast<size_t>(u)]) {
        if (indeg[static_cast<size_t>(q)] > 0) {
          u = q;
          break;
        }
      }
    }
    std::vector<int32_t> cycle(path.begin() + pos[static_cast<size_t>(u)], path.end());
    std::reverse(cycle.begin(), cycle.end());  // dependency first
    std::string msg = "dependency cycle: ";
    for (int32_t c : cycle) msg += unit_label(g, c, first_node, unit_group) + " -> ";
    msg += unit_label(g, cycle.front(), first_node, unit_group);
    throw GraphError(msg);
  }

  UnitSchedule s;
  s.offsets.reserve(num_units + 1);
  s.offsets.push_back(0);
  for (int32_t u : order) {
    const GroupId gid = unit_group[static_cast<size_t>(u)];
    if (gid < 0) {
      s.members.push_back(first_node[static_cast<size_t>(u)]);
    } else {
      const auto& m = g.group(gid).members;
      s.members.insert(s.members.end(), m.begin(), m.end());
    }
    s.group.push_back(gid);
    s.offsets.push_back(static_cast<int32_t>(s.members.size()));
  }
  return s;
}

}  // namespace sp::whatif
