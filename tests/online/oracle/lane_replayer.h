// The test oracle's replay: a StepModel replayed with the what-if engine's simulator (the same
// engine the offline CLI uses), one OpGraph per step, one simulator lane per what-if scenario.
// This was the product's method before the per-step analysis had to scale (online/README.md,
// "Scaling"); the tests keep it to check the new method on jobs small enough for it.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "model/step_model.h"
#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/simulator.h"

namespace sp::online::testing {

// Per-cell inputs, node-major: the value of node v in lane l is at [v * lanes + l].
struct LaneInputs {
  size_t lanes = 0;
  std::vector<double> work;   // compute: duration; comm: transfer time; marker: 0
  std::vector<double> delay;  // launch delay
};

struct LaneOutputs {
  std::vector<double> step_time;  // per lane: the longest rank's step (end marker - start)
  // For the lanes asked for (cell_lanes), per node: lane cell_lanes[k] of node v at
  // [v * cell_lanes.size() + k].
  std::vector<double> start, end;
};

class StepReplayer {
 public:
  // Builds the engine's graph. Throws whatif::GraphError on a cycle (one readable line).
  explicit StepReplayer(const StepModel& model);
  LaneOutputs run(const LaneInputs& in, const std::vector<size_t>& cell_lanes = {});

 private:
  whatif::OpGraph graph_;
  std::vector<int> starts_, markers_;
  // One simulator per number of lanes run (a full batch, the last one, M_W's single lane): the
  // replay order is worked out once per step and the simulator's buffers are reused.
  std::map<size_t, whatif::Simulator> simulators_;
};

}  // namespace sp::online::testing
