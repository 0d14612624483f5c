// The analysis input in the simulator's layout: the dependency graph of one model-parallel group
// for one step, and the measured times of every (node, lane) cell.
//
// build_megatron_model() derives it from a trace exactly as the paper's artifact does
// (pipeline send/recv pairing and its no-op rules, virtual-pipeline model chunks, data-parallel
// collectives with and without overlap, layer-norm / embedding all-reduces, the optimizer's
// global synchronisation), and computes the artifact's derived columns (transfer duration,
// launch delay, step-relative times) with the artifact's float32 arithmetic. The online
// analysis can also fill a LaneModel directly from its per-step summaries.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/op_type.h"
#include "straggler_probe/whatif/simulator.h"
#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

// The trace cannot be modelled (e.g. a replica lacks an op the dependency model needs, a
// pipeline send has no matching compute). One line naming the problem.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LaneModel {
  OpGraph graph;      // node label = OpType, node worker = stage
  LaneLayout lanes;   // lanes_per_step = data-parallel size; lane = step_index * dp + dp_rank
  std::vector<int64_t> steps;        // step number of each step index, ascending
  int32_t dp_size = 1;
  int32_t pp_size = 1;

  // Per node.
  std::vector<OpType> node_optype;
  std::vector<int32_t> node_stage;
  std::vector<int32_t> node_seq_id;

  // Global rank of each worker, [stage * dp_size + dp_rank].
  std::vector<int32_t> worker_rank;

  // Per cell (node-major, cell = node * num_lanes + lane). float32, as the artifact keeps them.
  std::vector<float> duration;      // traced duration
  std::vector<float> transfer;      // comm nodes: end - latest start in the group (NaN: compute)
  std::vector<float> launch_delay;  // start - latest end of the dependencies (>= 0 or > -10 ms)
  std::vector<float> real_start;    // traced start, relative to the step's first start
  std::vector<float> real_end;      // traced end, relative to the step's first start
  std::vector<int64_t> cell_row;    // trace row of the cell (-1 when not from a trace)

  size_t num_cells() const { return graph.num_nodes() * lanes.num_lanes(); }
  size_t cell(NodeId v, size_t lane) const {
    return static_cast<size_t>(v) * lanes.num_lanes() + lane;
  }
  int32_t rank_of(int32_t stage, int32_t dp_rank) const {
    return worker_rank[static_cast<size_t>(stage * dp_size + dp_rank)];
  }
};

// The artifact's dependency model and derived columns for a Megatron-style trace. `dsp_size`
// from the metadata decides, with the traced dp size, whether data-parallel collectives are
// modelled. Throws ModelError / GraphError.
LaneModel build_megatron_model(const TraceTable& trace, const JobMeta& meta);

// The same model restricted to the given steps (which must exist; kept in ascending order).
LaneModel select_steps(const LaneModel& model, std::span<const int64_t> steps);

}  // namespace sp::whatif
