// Builds the StepModel of one step from one summary per rank: checks, layout, logical ops (one
// source per op), each rank's chain (rank_chain.h), the communication groups (comm_groups.h)
// and the launch delays.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step_model.h"
#include "straggler_probe/step_summary.h"

namespace sp::online {

struct ModelOptions {
  double eps_s = 50e-6;     // tolerance when comparing timestamps of different threads
};

// Builds the model from one summary per rank (index = rank), each op timed by one source only
// (select_sources). Returns nullopt and one line in
// *error when the summaries contradict each other (unmatched collectives or p2p, bad layout).
std::optional<StepModel> build_step_model(const std::vector<const runtime::StepSummary*>& by_rank,
                                          const ModelOptions& options, std::string* error);

}  // namespace sp::online
