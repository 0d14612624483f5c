// Internal: the replay units of an OpGraph (a compute node, or a whole comm group whose members
// wait for each other) in a valid replay order, with cycle detection.
#pragma once

#include <cstdint>
#include <vector>

#include "straggler_probe/whatif/op_graph.h"

namespace sp::whatif {

struct UnitSchedule {
  // Unit u has members members[offsets[u] .. offsets[u + 1]); units are listed in replay order.
  std::vector<int32_t> offsets;
  std::vector<NodeId> members;
  std::vector<GroupId> group;  // per unit: its comm group, or -1 for a compute node
};

// Throws GraphError for a comm node without a group or a dependency cycle (naming its nodes).
UnitSchedule schedule_units(const OpGraph& graph);

}  // namespace sp::whatif
