// Internal: the artifact's derived per-cell columns, computed from the traced (raw, float32)
// start and end times with the artifact's float32 arithmetic.
#pragma once

#include <span>
#include <vector>

#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/simulator.h"

namespace sp::whatif {

// Transfer duration of every comm cell: end - latest start among the group's members in the
// lane (over all lanes of the step for a group synced across lanes). Values <= -10 ms (clock
// skew) become 0, as in the artifact. Compute cells get NaN.
void compute_transfer_durations(const OpGraph& graph, const LaneLayout& lanes,
                                std::span<const float> start, std::span<const float> end,
                                std::vector<float>& transfer);

// Launch delay of every cell: start - latest end of its dependencies (a source: start - its
// step's earliest start, `step_min`). Values <= -10 ms become 0; small negative ones stay,
// as in the artifact.
void compute_launch_delays(const OpGraph& graph, const LaneLayout& lanes,
                           std::span<const float> start, std::span<const float> end,
                           std::span<const float> step_min, std::vector<float>& launch);

}  // namespace sp::whatif
