// The step's op graph laid out for replaying one scenario at a time: nodes renumbered into
// positions in a valid replay order (each communication group's members side by side), with
// their dependencies as positions. Built once per step; every scenario of the step replays it.
//
// The replay semantics are the engine's (straggler_probe/whatif/simulator.h), so that a scenario
// replayed here gives the engine's numbers bit for bit: a node starts at the latest end of its
// dependencies plus its launch delay (a source: at its launch delay); a compute node ends at
// start + work; the members of a group end together at their latest start + their own work.
// A compute node is a group of one here, which is the same arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "model/step_model.h"

namespace sp::online {

struct ReplayPlan {
  size_t num_positions() const { return node_at.size(); }
  size_t num_units() const { return unit_begin.empty() ? 0 : unit_begin.size() - 1; }

  // Unit u (a compute node, a step start or end, or a whole communication group) covers the
  // positions [unit_begin[u], unit_begin[u + 1]); units are in replay order.
  std::vector<int32_t> unit_begin;
  std::vector<int32_t> unit_of;    // per position: its unit
  // Dependencies of position p: deps[dep_begin[p] .. dep_begin[p + 1]) (positions, all earlier).
  std::vector<int32_t> dep_begin;
  std::vector<int32_t> deps;
  std::vector<int32_t> node_at;    // per position: the StepModel node
  std::vector<int32_t> position_of;  // per StepModel node: its position
  std::vector<int32_t> rank_at;    // per position: its rank
  std::vector<int32_t> start_at;   // per rank: position of its step start
  std::vector<int32_t> marker_at;  // per rank: position of its step-end marker

  // Working arrays of build_replay_plan, kept so that the next step reuses their memory.
  struct Scratch {
    std::vector<int32_t> node_dep_begin, node_deps;  // the nodes' dependencies, flat
    std::vector<int32_t> unit_of_node, members_begin, members, fill;
    std::vector<int32_t> indegree, out_begin, out, order;
  } scratch;
};

// Lays out `model` into `plan`, reusing its buffers. Throws whatif::GraphError (the engine's
// one-line message naming the nodes) when a communication node has no group or the
// dependencies, with each group taken as one unit, have a cycle.
void build_replay_plan(const StepModel& model, ReplayPlan* plan);

}  // namespace sp::online
