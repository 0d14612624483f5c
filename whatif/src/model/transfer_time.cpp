#include <algorithm>
#include <limits>

#include "derived_columns.h"

namespace sp::whatif {

void compute_transfer_durations(const OpGraph& graph, const LaneLayout& lanes,
                                std::span<const float> start, std::span<const float> end,
                                std::vector<float>& transfer) {
  const size_t L = lanes.num_lanes();
  const auto lps = static_cast<size_t>(lanes.lanes_per_step);
  transfer.assign(graph.num_nodes() * L, std::numeric_limits<float>::quiet_NaN());
  // The artifact clamps in float32 (its column is float32 there): -0.01 rounds to float first.
  constexpr float kClamp = -0.01f;
  std::vector<float> latest(L);
  for (size_t g = 0; g < graph.num_groups(); ++g) {
    const CommGroup& grp = graph.group(static_cast<GroupId>(g));
    for (size_t l = 0; l < L; ++l) {
      float mx = start[static_cast<size_t>(grp.members[0]) * L + l];
      for (NodeId m : grp.members) mx = std::max(mx, start[static_cast<size_t>(m) * L + l]);
      latest[l] = mx;
    }
    if (grp.sync_across_lanes) {
      for (size_t s = 0; s < L / lps; ++s) {
        const float mx = *std::max_element(latest.begin() + static_cast<std::ptrdiff_t>(s * lps),
                                           latest.begin() + static_cast<std::ptrdiff_t>((s + 1) * lps));
        std::fill(latest.begin() + static_cast<std::ptrdiff_t>(s * lps),
                  latest.begin() + static_cast<std::ptrdiff_t>((s + 1) * lps), mx);
      }
    }
    for (NodeId m : grp.members) {
      for (size_t l = 0; l < L; ++l) {
        const size_t c = static_cast<size_t>(m) * L + l;
        const float td = end[c] - latest[l];
        transfer[c] = td <= kClamp ? 0.0f : td;
      }
    }
  }
}

}  // namespace sp::whatif
