// The program of one training step across all traced workers, as the synthetic generator
// replays it: nodes (one issued operation on one worker; a batched send/recv is one node with
// several trace records), "happens after" edges, and rendezvous (a p2p transfer or collective:
// every member ends at the latest member's start plus the transfer time).
//
// The structure is the same for every step; only durations change, so it is built once.
#pragma once

#include <cstdint>
#include <vector>

#include "straggler_probe/whatif/op_type.h"

namespace sp::whatif {
struct SyntheticJobSpec;
}

namespace sp::whatif::synth {

// What a node does on its own once issued; selects the duration that is sampled for it.
enum class Work : uint8_t { kNone, kForward, kBackward, kP2pBatch, kGc, kLayernorm, kOptimizer };

// What a rendezvous moves; selects its sampled transfer time.
enum class Transfer : uint8_t {
  kP2p,
  kParamsAllGather,
  kGradsReduceScatter,
  kSeparateGradsAllReduce,
  kEmbeddingAllReduce,
  kClipAllReduce,
};

struct Node {
  int32_t worker = 0;  // dp_rank * pp_size + stage
  Work work = Work::kNone;
  int32_t micro_batch = -1;  // compute nodes only
  int32_t chunk = -1;        // compute nodes only: model chunk on this stage
};

// One trace row a node produces (all rows of a node share its start and end).
struct Record {
  OpType type;
  int32_t seq_id;
  int32_t mc;
  int32_t mb_id;
  int32_t gmc;
};

// Compressed adjacency: the items of node/rendezvous i are items[offsets[i] .. offsets[i+1]).
struct Adjacency {
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> items;
  size_t count(size_t i) const { return offsets[i + 1] - offsets[i]; }
  const uint32_t* begin(size_t i) const { return items.data() + offsets[i]; }
  const uint32_t* end(size_t i) const { return items.data() + offsets[i + 1]; }
};

struct StepGraph {
  int num_workers = 0;
  std::vector<Node> nodes;
  std::vector<Record> records;   // grouped by node, in node order
  std::vector<uint32_t> record_offsets;  // node i owns records[record_offsets[i] .. [i+1])
  Adjacency predecessors;        // per node
  Adjacency successors;          // per node
  std::vector<Transfer> rendezvous_kind;
  Adjacency rendezvous_members;  // per rendezvous: its nodes
  Adjacency node_rendezvous;     // per node: the rendezvous it takes part in
};

// Builds one step's program for the spec (which must be valid). Throws std::logic_error if the
// schedule leaves a transfer without its peer, which would be a bug in the schedule code.
StepGraph build_step_graph(const SyntheticJobSpec& spec);

}  // namespace sp::whatif::synth
