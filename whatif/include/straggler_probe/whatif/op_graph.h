// A generic dependency graph of the operations of one training step, for the what-if simulator.
//
// The graph describes ONE model-parallel group for ONE step. The simulator replays it for many
// "lanes" at once (one lane per data-parallel replica and step, see simulator.h), because every
// replica and every step runs the same schedule. Nothing here is Megatron-specific: the
// Megatron builder (megatron_model.h) and the online analysis both produce an OpGraph.
//
// Semantics, as in the paper's simulator:
// - a node starts when all its dependencies have ended (plus its launch delay, if any);
// - a compute node ends at start + its duration;
// - a communication node belongs to exactly one communication group; all members of a group end
//   together at (latest start among the members) + (each member's own transfer duration). A group
//   marked sync_across_lanes additionally takes the latest start over all lanes of the same step
//   (a data-parallel collective spans the replicas, which are lanes here).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace sp::whatif {

using NodeId = int32_t;
using GroupId = int32_t;

enum class NodeKind : uint8_t { kCompute, kComm };

// A malformed graph: unknown node, comm node without group, a dependency cycle. The message is
// one readable line naming the nodes involved.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OpNode {
  std::string name;       // unique, shown in error messages (e.g. "forward-compute_3_1")
  NodeKind kind = NodeKind::kCompute;
  int32_t label = -1;     // caller's tag (the Megatron builder stores the OpType here)
  int32_t worker = -1;    // caller's tag for the worker/stage the node runs on
  bool ends_step = false; // the step ends when the last such node ends (the optimizer)
  GroupId group = -1;     // comm group, set by add_comm_group
};

struct CommGroup {
  std::vector<NodeId> members;
  bool sync_across_lanes = false;
};

class OpGraph {
 public:
  NodeId add_node(std::string name, NodeKind kind, int32_t label = -1, int32_t worker = -1,
                  bool ends_step = false);
  // `node` may only start after `dependency` has ended. Repeated edges are kept once.
  void add_dependency(NodeId node, NodeId dependency);
  // Every comm node must be in exactly one group; compute nodes cannot be in a group.
  GroupId add_comm_group(std::span<const NodeId> members, bool sync_across_lanes);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_groups() const { return groups_.size(); }
  const OpNode& node(NodeId v) const { return nodes_[static_cast<size_t>(v)]; }
  const CommGroup& group(GroupId g) const { return groups_[static_cast<size_t>(g)]; }
  std::span<const NodeId> dependencies(NodeId v) const { return deps_[static_cast<size_t>(v)]; }
  // Node id by name, or -1.
  NodeId find(const std::string& name) const;

  // Checks that every comm node has a group and that the graph (with each comm group merged
  // into one unit, since its members wait for each other) is acyclic. Throws GraphError naming
  // the nodes on a cycle, e.g. "dependency cycle: a -> b -> {c, d} -> a".
  void validate() const;

 private:
  std::vector<OpNode> nodes_;
  std::vector<std::vector<NodeId>> deps_;
  std::vector<CommGroup> groups_;
  std::unordered_map<std::string, NodeId> by_name_;
};

}  // namespace sp::whatif
