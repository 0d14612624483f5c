// Incremental construction of a StepGraph (see synthetic_trace_graph.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "synthetic_trace_graph.h"

namespace sp::whatif::synth {

class GraphBuilder {
 public:
  explicit GraphBuilder(int num_workers);

  uint32_t add_node(int32_t worker, Work work, int32_t micro_batch = -1, int32_t chunk = -1);
  // Adds a trace row to the most recent node; seq_id is assigned per (worker, op type).
  void add_record(OpType type, int32_t mc, int32_t mb_id, int32_t gmc);
  void add_edge(uint32_t before, uint32_t after);
  uint32_t add_rendezvous(Transfer kind);
  void join(uint32_t rendezvous, uint32_t node);

  StepGraph finish() &&;

 private:
  StepGraph graph_;
  std::vector<int32_t> next_seq_;                          // per worker x op type
  std::vector<std::pair<uint32_t, uint32_t>> edges_;        // (after, before)
  std::vector<std::pair<uint32_t, uint32_t>> memberships_;  // (rendezvous, node)
};

}  // namespace sp::whatif::synth
