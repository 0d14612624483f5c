// Cross-rank communication groups: collectives matched by (group id, sequence number), p2p
// send/recv matched by (sender, receiver, order). Each member's transfer time is its end minus
// the latest start in its group; the waiting before that is left out (the paper's rule).
#pragma once

#include <string>
#include <vector>

#include "step_model.h"
#include "straggler_probe/probe.h"

namespace sp::online {

struct CommRecord {
  int logical = 0;          // index into StepModel::ops (first_node set)
  const sp_event* ev = nullptr;
};

// Fills model->groups and each comm node's duration (its transfer time). Returns false with one
// line in *error when ranks disagree: a collective some members lack, different collective
// types under one (group, seq), a send without its recv.
bool match_comm_groups(StepModel* model, const std::vector<CommRecord>& comm, double eps,
                       std::string* error);

}  // namespace sp::online
