// GraphBuilder: collects nodes, records, edges and rendezvous memberships while the schedule is
// written, then packs them into the StepGraph's compressed adjacency lists.
#include "synthetic_trace_graph_builder.h"

#include <stdexcept>

namespace sp::whatif::synth {

namespace {

// Counting sort of (key, item) pairs into offsets/items; items keep their insertion order
// within a key, which the simulator relies on for determinism only.
Adjacency pack(size_t num_keys, const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  Adjacency adj;
  adj.offsets.assign(num_keys + 1, 0);
  for (const auto& [key, item] : pairs) ++adj.offsets[key + 1];
  for (size_t i = 0; i < num_keys; ++i) adj.offsets[i + 1] += adj.offsets[i];
  adj.items.resize(pairs.size());
  std::vector<uint32_t> fill(adj.offsets.begin(), adj.offsets.end() - 1);
  for (const auto& [key, item] : pairs) adj.items[fill[key]++] = item;
  return adj;
}

}  // namespace

GraphBuilder::GraphBuilder(int num_workers) {
  graph_.num_workers = num_workers;
  next_seq_.assign(static_cast<size_t>(num_workers) * kNumOpTypes, 0);
}

uint32_t GraphBuilder::add_node(int32_t worker, Work work, int32_t micro_batch, int32_t chunk) {
  graph_.record_offsets.push_back(static_cast<uint32_t>(graph_.records.size()));
  graph_.nodes.push_back(Node{worker, work, micro_batch, chunk});
  return static_cast<uint32_t>(graph_.nodes.size() - 1);
}

void GraphBuilder::add_record(OpType type, int32_t mc, int32_t mb_id, int32_t gmc) {
  if (graph_.nodes.empty()) throw std::logic_error("synthetic trace: record before any node");
  // Each op type lives on one stream of a worker and the schedule is written in issue order,
  // so numbering in creation order is numbering by start time, as the trace schema requires.
  const size_t slot = static_cast<size_t>(graph_.nodes.back().worker) * kNumOpTypes +
                      static_cast<size_t>(type);
  graph_.records.push_back(Record{type, next_seq_[slot]++, mc, mb_id, gmc});
}

void GraphBuilder::add_edge(uint32_t before, uint32_t after) { edges_.emplace_back(after, before); }

uint32_t GraphBuilder::add_rendezvous(Transfer kind) {
  graph_.rendezvous_kind.push_back(kind);
  return static_cast<uint32_t>(graph_.rendezvous_kind.size() - 1);
}

void GraphBuilder::join(uint32_t rendezvous, uint32_t node) {
  memberships_.emplace_back(rendezvous, node);
}

StepGraph GraphBuilder::finish() && {
  const size_t n = graph_.nodes.size();
  graph_.record_offsets.push_back(static_cast<uint32_t>(graph_.records.size()));
  graph_.predecessors = pack(n, edges_);
  std::vector<std::pair<uint32_t, uint32_t>> reversed;
  reversed.reserve(edges_.size());
  for (const auto& [after, before] : edges_) reversed.emplace_back(before, after);
  graph_.successors = pack(n, reversed);
  graph_.rendezvous_members = pack(graph_.rendezvous_kind.size(), memberships_);
  std::vector<std::pair<uint32_t, uint32_t>> by_node;
  by_node.reserve(memberships_.size());
  for (const auto& [rv, node] : memberships_) by_node.emplace_back(node, rv);
  graph_.node_rendezvous = pack(n, by_node);
  for (size_t r = 0; r < graph_.rendezvous_kind.size(); ++r) {
    if (graph_.rendezvous_members.count(r) == 0) {
      throw std::logic_error("synthetic trace: a transfer has no participants");
    }
  }
  return std::move(graph_);
}

}  // namespace sp::whatif::synth
