// Replays one step of a StepGraph with given durations.
#pragma once

#include <vector>

#include "synthetic_trace_graph.h"

namespace sp::whatif::synth {

struct StepDurations {
  std::vector<double> own;       // per node: local work after issue (compute time, ...)
  std::vector<double> gap;       // per node: CPU launch gap before issue
  std::vector<double> transfer;  // per rendezvous
};

// A node is issued at max(its worker's ready time, ends of its predecessors) + gap and ends at
// max(issue + own, for each rendezvous: latest member issue + transfer). Fills start and end
// (per node). Throws std::logic_error naming a stuck worker if the program deadlocks, which
// would be a bug in the schedule.
void simulate_step(const StepGraph& graph, const std::vector<double>& worker_ready,
                   const StepDurations& durations, std::vector<double>& start,
                   std::vector<double>& end);

}  // namespace sp::whatif::synth
