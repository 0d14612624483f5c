// The what-if simulator: replays an OpGraph over many lanes at once.
//
// A lane is one copy of the graph: one data-parallel replica in one step. Lanes are numbered
// step-major (lane = step_index * lanes_per_step + replica), so the lanes of a step are
// contiguous. All per-cell arrays are node-major: the value of node v in lane l is at
// [v * num_lanes + l], so a node's lanes are contiguous and the replay is a few streaming passes
// per node (the artifact's "SIMD" layout).
//
// Times are double. A source node (no dependencies) starts at step_start[step] + launch delay;
// other nodes at max(end of dependencies) + launch delay. Compute: end = start + work.
// Comm group: end of member m = (max start over members, and over the step's lanes if the group
// syncs across lanes) + work of m. These are the artifact's operations in the artifact's order,
// so results match it bit for bit given the same inputs.
//
// The Simulator keeps its buffers between runs: repeated runs (the analysis makes ~100) do not
// allocate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "straggler_probe/whatif/op_graph.h"

namespace sp::whatif {

struct LaneLayout {
  int32_t num_steps = 1;
  int32_t lanes_per_step = 1;
  size_t num_lanes() const {
    return static_cast<size_t>(num_steps) * static_cast<size_t>(lanes_per_step);
  }
};

// Replaces the inputs of some cells by other values (the what-if "put back the real durations
// of this group"). A cell (v, l) is selected when cell_mask[v * num_lanes + l] != 0 if cell_mask
// is given, else when node_mask[v] != 0 and (lane_mask is empty or lane_mask[l] != 0).
struct SimOverlay {
  std::span<const double> work;          // per cell; empty: selected cells keep the base work
  std::span<const double> launch_delay;  // per cell; empty: selected cells keep the base delay
  std::span<const uint8_t> node_mask;    // per node
  std::span<const uint8_t> lane_mask;    // per lane, or empty for all lanes
  std::span<const uint8_t> cell_mask;    // per cell, or empty to use node_mask x lane_mask
};

struct SimInput {
  std::span<const double> work;          // per cell: duration (compute) / transfer time (comm)
  std::span<const double> launch_delay;  // per cell, or empty for none
  std::span<const double> step_start;    // per step, or empty for 0
  const SimOverlay* overlay = nullptr;
  // Replay only these lanes (ascending; empty: all). Lanes left out must not matter: e.g. when
  // the inputs of the left-out lanes of a step equal those of a replayed lane of that step, the
  // step results are exact.
  std::span<const uint32_t> lanes;
  // Keep the start and end of every replayed cell (else only the per-step results).
  bool want_cells = true;
  // Also compute, per step, the earliest start and latest end over all replayed cells (the
  // step's span as a trace would show it).
  bool want_span = false;
};

// Views into the simulator's buffers, valid until its next run.
struct SimResult {
  std::span<const double> start;       // per cell, when want_cells (lanes not replayed: stale)
  std::span<const double> end;         // per cell, when want_cells
  std::span<const double> step_end;    // per step: latest end of an ends_step node (-inf if none)
  std::span<const double> span_start;  // per step, when want_span
  std::span<const double> span_end;    // per step, when want_span
};

class Simulator {
 public:
  // Validates the graph (throws GraphError) and precomputes the replay order.
  Simulator(const OpGraph& graph, LaneLayout lanes);

  const LaneLayout& lanes() const { return lanes_; }
  size_t num_nodes() const { return num_nodes_; }
  size_t num_cells() const { return num_nodes_ * lanes_.num_lanes(); }

  // Throws std::invalid_argument when an input has the wrong size.
  SimResult run(const SimInput& in);

  // Hands the per-cell start and end times of the last run with want_cells over to the caller
  // (no copy); the next such run allocates new buffers.
  void release_cells(std::vector<double>& start, std::vector<double>& end);

 private:
  // The replay runs block by block: a few whole steps at a time (steps are independent), so
  // that the block's end times stay in cache.
  void run_block(const SimInput& in);
  // run_block's parts: the start times of node v into `s` (one per block lane); what is kept
  // once a node's start `s` and end `e` are known; a comm group's replay.
  void start_node(NodeId v, const SimInput& in, double* s);
  void finish_node(NodeId v, const SimInput& in, const double* s, const double* e);
  void run_comm_group(const NodeId* members, size_t num_members, bool synced_over_lanes, const SimInput& in);
  // The block's per-lane values of node v from a per-cell array (with the overlay applied when
  // `alt` is given): a pointer into `base` when possible, else gathered into `scratch`.
  const double* block_values(NodeId v, std::span<const double> base,
                             std::span<const double> alt, const SimOverlay* ov,
                             double* scratch) const;

  LaneLayout lanes_;
  size_t num_nodes_ = 0;
  // Replay units in replay order: a compute node, or a comm group (members start one by one,
  // then end together). Unit u has members unit_members_[unit_offsets_[u] .. [u + 1]).
  std::vector<int32_t> unit_offsets_;
  std::vector<NodeId> unit_members_;
  std::vector<int8_t> unit_kind_;         // 0 compute, 1 comm group, 2 comm group synced over lanes
  size_t max_group_size_ = 1;
  std::vector<int32_t> dep_offsets_;      // CSR of dependencies per node
  std::vector<NodeId> dep_nodes_;
  std::vector<uint8_t> ends_step_;
  size_t block_capacity_ = 1;             // lanes per block

  // Outputs.
  std::vector<double> start_;
  std::vector<double> end_;
  std::vector<double> step_end_;
  std::vector<double> span_start_;
  std::vector<double> span_end_;

  // The current block: its lanes, each lane's step and the step segments.
  std::vector<uint32_t> blk_lanes_;
  std::vector<uint32_t> blk_step_;
  std::vector<uint32_t> blk_seg_;         // segment k covers [blk_seg_[k], blk_seg_[k + 1])
  std::vector<uint32_t> blk_seg_step_;
  bool blk_contiguous_ = true;
  size_t blk_size_ = 0;
  std::vector<double> blk_end_;           // [node][block lane]
  std::vector<double> blk_start_;         // [group member][block lane]
  std::vector<double> blk_group_;         // [block lane] latest start of the current group
  std::vector<double> blk_work_;          // scratch [block lane]
  std::vector<double> blk_delay_;         // scratch [block lane]
};

}  // namespace sp::whatif
