// Internal: the dependency model of a Megatron-style trace before it becomes an OpGraph.
//
// As in the artifact, the model is derived from one template: the rows of data-parallel rank 0
// in the first step (every replica and step runs the same schedule). Ops are named
// "<optype>_<seq_id>_<stage>", the artifact's names, so error messages match its vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "straggler_probe/whatif/lane_model.h"
#include "straggler_probe/whatif/op_type.h"
#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

// The trace with the artifact's float32 derived columns.
struct TraceView {
  const TraceTable* table = nullptr;
  std::vector<float> start;  // float32 start_ts
  std::vector<float> dur;    // float32 duration
  std::vector<float> end;    // float32(start + duration), as the artifact computes it
};

struct ModelSkeleton {
  // Per op (node) of the template.
  std::vector<OpType> optype;
  std::vector<int32_t> stage;
  std::vector<int32_t> seq_id;
  std::vector<size_t> template_row;
  std::vector<std::vector<int32_t>> deps;  // in-rank dependencies
  std::vector<uint8_t> modelled;           // the model says when this op may start
  // Communication groups (cross-rank synchronisation).
  std::vector<std::vector<int32_t>> groups;
  std::vector<uint8_t> group_sync;         // synchronised across the data-parallel replicas
  int32_t pp = 1;
  int32_t dp = 1;
  bool use_dp = false;
  bool overlap_dp = false;

  std::unordered_map<uint64_t, int32_t> by_key;

  static uint64_t key(OpType t, int32_t seq, int32_t st) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(st)) << 40) |
           (static_cast<uint64_t>(t) << 32) | static_cast<uint32_t>(seq);
  }
  int32_t find(OpType t, int32_t seq, int32_t st) const {
    auto it = by_key.find(key(t, seq, st));
    return it == by_key.end() ? -1 : it->second;
  }
  // Like find, but a missing op is a ModelError saying which rule needed it.
  int32_t require(OpType t, int32_t seq, int32_t st, const char* why) const;
  std::string name(int32_t op) const;
  static std::string name(OpType t, int32_t seq, int32_t st);

  // deps[op] += dep (also marks op as modelled).
  void add_dep(int32_t op, int32_t dep) {
    deps[static_cast<size_t>(op)].push_back(dep);
    modelled[static_cast<size_t>(op)] = 1;
  }
  void mark(int32_t op) { modelled[static_cast<size_t>(op)] = 1; }
  // The artifact's chain: each op depends on the previous one; the first on `first_deps`.
  void chain(const std::vector<int32_t>& ops, const std::vector<int32_t>& first_deps);
};

// Rows of one stage of the template, sorted as the artifact sorts them: by start time, then
// seq_id, then op type name.
std::vector<size_t> sorted_template_rows(const TraceView& tv, const std::vector<size_t>& rows);

// Pipeline p2p: pairs sends with receives (skipping the artifact's two kinds of no-op) and adds
// the compute <-> p2p dependencies. `stage_rows` are the template rows of each stage.
void build_p2p_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                     ModelSkeleton& m);

// Everything else: compute and p2p stream order, first backward send/recv, data-parallel
// collectives (with or without overlap), the post-compute chain, embedding and optimizer sync.
void build_rank_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                      int dsp_size, bool trace_has_separate_grads, ModelSkeleton& m);

}  // namespace sp::whatif
