#include "straggler_probe/whatif/op_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "graph_units.h"

namespace sp::whatif {

NodeId OpGraph::add_node(std::string name, NodeKind kind, int32_t label, int32_t worker,
                         bool ends_step) {
  const auto id = static_cast<NodeId>(nodes_.size());
  if (!by_name_.emplace(name, id).second) {
    throw GraphError("duplicate node name '" + name + "'");
  }
  OpNode n;
  n.name = std::move(name);
  n.kind = kind;
  n.label = label;
  n.worker = worker;
  n.ends_step = ends_step;
  nodes_.push_back(std::move(n));
  deps_.emplace_back();
  return id;
}

void OpGraph::add_dependency(NodeId node, NodeId dependency) {
  const auto n = static_cast<NodeId>(nodes_.size());
  if (node < 0 || node >= n || dependency < 0 || dependency >= n) {
    throw GraphError("add_dependency: node id out of range");
  }
  auto& d = deps_[static_cast<size_t>(node)];
  // The artifact's lists may repeat an edge; once is enough for a max.
  if (std::find(d.begin(), d.end(), dependency) == d.end()) d.push_back(dependency);
}

GroupId OpGraph::add_comm_group(std::span<const NodeId> members, bool sync_across_lanes) {
  if (members.empty()) throw GraphError("add_comm_group: empty group");
  const auto gid = static_cast<GroupId>(groups_.size());
  for (NodeId v : members) {
    if (v < 0 || static_cast<size_t>(v) >= nodes_.size()) {
      throw GraphError("add_comm_group: node id out of range");
    }
    OpNode& n = nodes_[static_cast<size_t>(v)];
    if (n.kind != NodeKind::kComm) {
      throw GraphError("compute node '" + n.name + "' cannot be in a communication group");
    }
    if (n.group >= 0) {
      throw GraphError("node '" + n.name + "' is in two communication groups");
    }
    n.group = gid;
  }
  groups_.push_back(CommGroup{std::vector<NodeId>(members.begin(), members.end()),
                              sync_across_lanes});
  return gid;
}

NodeId OpGraph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void OpGraph::validate() const { (void)schedule_units(*this); }

}  // namespace sp::whatif
