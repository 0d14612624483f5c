// The straggler-free durations. Per op type over all replicas, stages and steps: compute ops
// (forward/backward, gc, optimizer) take the mean duration, communication ops the median
// (stragglers make some transfers very long, which would skew a mean). Communication ops that
// the simulator times by their transfer duration get the median transfer duration, stored as
// float32 like the artifact's column; the others (e.g. the layer-norm all-reduce, not
// synchronised in the model) get the median of their durations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis_state.h"
#include "pandas_numerics.h"

namespace sp::whatif {
namespace {

// pandas' median: the middle value, or the mean of the two middle values, in float64.
double median(std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t n = v.size();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  const double hi = *mid;
  if (n % 2) return hi;
  const double lo = *std::max_element(v.begin(), mid);
  return (hi + lo) / 2;
}

}  // namespace

void compute_ideal_work(const LaneModel& model, const std::vector<uint8_t>& is_comm,
                        std::span<const double> start, std::span<const double> end,
                        std::vector<double>& work_ideal) {
  // The artifact's duration column after the no-delay replay: end - start.
  const auto dur_nodelay = [&](size_t c) { return end[c] - start[c]; };
  const size_t N = model.graph.num_nodes();
  const size_t L = model.lanes.num_lanes();
  const auto dp = static_cast<size_t>(model.dp_size);

  // Means follow pandas' row order (step, rank, op type, seq_id): the compensated sum is not
  // order-free. Nodes of each stage sorted by (op type, seq_id); workers by rank.
  std::vector<std::vector<NodeId>> stage_nodes(static_cast<size_t>(model.pp_size));
  for (size_t v = 0; v < N; ++v) {
    stage_nodes[static_cast<size_t>(model.node_stage[v])].push_back(static_cast<NodeId>(v));
  }
  for (auto& nodes : stage_nodes) {
    std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) {
      const auto ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
      if (model.node_optype[ia] != model.node_optype[ib]) return model.node_optype[ia] < model.node_optype[ib];
      return model.node_seq_id[ia] < model.node_seq_id[ib];
    });
  }
  std::vector<std::pair<int32_t, int32_t>> workers;  // (stage, dp rank) by rank
  for (int32_t s = 0; s < model.pp_size; ++s) {
    for (int32_t d = 0; d < model.dp_size; ++d) workers.emplace_back(s, d);
  }
  std::sort(workers.begin(), workers.end(), [&](const auto& a, const auto& b) {
    return model.rank_of(a.first, a.second) < model.rank_of(b.first, b.second);
  });

  std::vector<KahanMean> means(kNumOpTypes);
  for (size_t st = 0; st < static_cast<size_t>(model.lanes.num_steps); ++st) {
    for (const auto& [s, d] : workers) {
      const size_t lane = st * dp + static_cast<size_t>(d);
      for (NodeId v : stage_nodes[static_cast<size_t>(s)]) {
        const auto t = model.node_optype[static_cast<size_t>(v)];
        if (is_comm_for_ideal(t)) continue;
        means[static_cast<size_t>(t)].add(dur_nodelay(static_cast<size_t>(v) * L + lane));
      }
    }
  }

  std::vector<double> duration_ideal(kNumOpTypes, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> transfer_ideal(kNumOpTypes, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> values;
  for (int ti = 0; ti < kNumOpTypes; ++ti) {
    const auto t = static_cast<OpType>(ti);
    if (!is_comm_for_ideal(t)) {
      if (means[static_cast<size_t>(ti)].count()) duration_ideal[static_cast<size_t>(ti)] = means[static_cast<size_t>(ti)].mean();
      continue;
    }
    // The median duration only matters for nodes the simulator times by duration.
    bool any_compute_node = false;
    for (size_t v = 0; v < N; ++v) any_compute_node |= model.node_optype[v] == t && !is_comm[v];
    if (any_compute_node) {
      values.clear();
      for (size_t v = 0; v < N; ++v) {
        if (model.node_optype[v] != t) continue;
        for (size_t c = v * L; c < (v + 1) * L; ++c) values.push_back(dur_nodelay(c));
      }
      duration_ideal[static_cast<size_t>(ti)] = median(values);
    }
    values.clear();
    for (size_t v = 0; v < N; ++v) {
      if (model.node_optype[v] != t) continue;
      for (size_t l = 0; l < L; ++l) {
        const float x = model.transfer[v * L + l];
        if (!std::isnan(x)) values.push_back(static_cast<double>(x));
      }
    }
    // The median of a float32 column is computed in float64 and stored back as float32.
    const double m = median(values);
    transfer_ideal[static_cast<size_t>(ti)] = static_cast<double>(static_cast<float>(m));
  }

  work_ideal.resize(N * L);
  for (size_t v = 0; v < N; ++v) {
    const auto t = static_cast<size_t>(model.node_optype[v]);
    const double w = is_comm[v] ? transfer_ideal[t] : duration_ideal[t];
    std::fill(work_ideal.begin() + static_cast<std::ptrdiff_t>(v * L),
              work_ideal.begin() + static_cast<std::ptrdiff_t>((v + 1) * L), w);
  }
}

}  // namespace sp::whatif
