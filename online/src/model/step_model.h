// The op model of one training step: the graph the what-if engine replays (in-rank dependencies
// + communication groups), with each node's recorded duration and launch delay. Types only; it
// is built from every rank's StepSummary by step_model_builder.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node_list.h"
#include "op_classes.h"

namespace sp::online {

// One recorded op of one rank.
struct LogicalOp {
  int rank = 0;
  uint32_t kind = 0;        // sp_op_kind
  int type = 0;             // index into StepModel::type_names
  int key = 0;              // index into StepModel::ideal_keys
  int delay_key = 0;        // index into StepModel::delay_keys
  IdealRule rule = IdealRule::kMean;
  int microbatch = -1;
  double start = 0, end = 0;  // recorded, seconds since StepModel::t0_ns
  double own = 0;           // compute: exclusive duration (its segments); comm: transfer time
  int first_node = -1;      // the node that carries this op's launch delay
};

// kStart: the rank's step start (its launch delay is the rank's offset from t0, the same in
// every scenario); kMarker: the rank's step end.
enum class NodeRole : uint8_t { kCompute, kComm, kMarker, kStart };

// One node of the replayed graph. A compute op becomes one or more segments: it is cut where
// nested compute ops (a GC pause inside forward) and communication launches fall, and the time it
// spent blocked on its own collectives (DDP's final bucket wait) is left out, so its duration
// is the op's own work.
struct Node {
  int logical = -1;         // -1 for the step start / end markers
  int rank = 0;
  NodeRole role = NodeRole::kCompute;
  double start = 0, end = 0;  // recorded
  double duration = 0;      // compute: segment length; comm: transfer; marker: 0
  double launch_delay = 0;  // start - max(dep ends), >= 0; roots: start - t0
  int group = -1;           // communication group index
  NodeList deps;            // in-rank dependencies (node indices; up to 4 kept inline)
};

// Sum of sequence lengths (and of their squares) of one micro-batch on one rank.
struct MicrobatchCost {
  int rank = 0;
  int microbatch = -1;
  double sum_len = 0, sum_len_sq = 0;
};

struct StepModel {
  int64_t step = 0;
  int world = 0;
  int dp_size = 1, pp_size = 1;
  std::vector<int> rank_dp, rank_stage;
  uint64_t t0_ns = 0;
  // Measured step time: the longest rank's step (its step mark - its step start). Per rank,
  // because pipeline stages start their steps at different times.
  double time_s = 0;
  // Per rank, the CPU time of its step-marking thread over the step (StepSummary::step_cpu_ns),
  // in seconds; 0 where unknown or where some of its ops were timed off the CPU (a device's).
  std::vector<double> rank_cpu_s;
  std::vector<std::string> type_names;
  std::vector<std::string> ideal_keys;
  std::vector<std::string> delay_keys;
  std::vector<LogicalOp> ops;
  std::vector<Node> nodes;
  std::vector<NodeList> groups;          // communication groups (node indices)
  std::vector<int> markers;              // step-end marker node per rank
  std::vector<int> starts;               // step-start node per rank
  int marker_delay_key = 0;              // delay key of the step-end markers
  std::vector<MicrobatchCost> costs;
  uint64_t clamped = 0;     // negative launch delays / transfers set to zero
  uint64_t ignored = 0;     // kernel/memcpy records left out
  // One op, one source (source_selection.h): ops left out because a better source timed them,
  // lesser-source ops kept because the better source lacked them, and the former by
  // "kind: lesser < chosen".
  uint64_t superseded = 0;
  uint64_t kept_alone = 0;
  std::map<std::string, uint64_t> superseded_by;
  std::vector<std::string> notes;  // non-fatal oddities (bad annotation values...)
};

}  // namespace sp::online
