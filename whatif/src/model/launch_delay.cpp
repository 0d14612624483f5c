#include <algorithm>

#include "derived_columns.h"

namespace sp::whatif {

void compute_launch_delays(const OpGraph& graph, const LaneLayout& lanes,
                           std::span<const float> start, std::span<const float> end,
                           std::span<const float> step_min, std::vector<float>& launch) {
  const size_t L = lanes.num_lanes();
  const auto lps = static_cast<size_t>(lanes.lanes_per_step);
  launch.assign(graph.num_nodes() * L, 0.0f);
  std::vector<float> ready(L);
  for (size_t v = 0; v < graph.num_nodes(); ++v) {
    const auto deps = graph.dependencies(static_cast<NodeId>(v));
    if (deps.empty()) {
      for (size_t l = 0; l < L; ++l) ready[l] = step_min[l / lps];
    } else {
      for (size_t l = 0; l < L; ++l) {
        float mx = end[static_cast<size_t>(deps[0]) * L + l];
        for (NodeId d : deps) mx = std::max(mx, end[static_cast<size_t>(d) * L + l]);
        ready[l] = mx;
      }
    }
    for (size_t l = 0; l < L; ++l) {
      const size_t c = v * L + l;
      const float delay = start[c] - ready[l];
      // Here the artifact's column is float64, so the clamp compares in float64.
      launch[c] = static_cast<double>(delay) <= -0.01 ? 0.0f : delay;
    }
  }
}

}  // namespace sp::whatif
