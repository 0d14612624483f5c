// In-rank dependencies of one rank: its compute ops become a chain of segments, its communication
// ops hang off the segment that launched them, and a step-end marker closes the rank's step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "step_model.h"

namespace sp::online {

struct CommStreamOp {
  int logical = 0;       // index into StepModel::ops
  uint64_t stream = 0;   // ops of one stream run in order (one per process group / p2p peer)
};

// build_rank_chain's working arrays, kept from one rank to the next (one for a step's ranks):
// a rank's chain needs a few dozen small arrays, which allocated and freed per rank cost the
// allocator's bookkeeping more than the work.
class RankChainScratch {
 public:
  RankChainScratch();
  ~RankChainScratch();
  RankChainScratch(const RankChainScratch&) = delete;
  RankChainScratch& operator=(const RankChainScratch&) = delete;

  struct Buffers;
  Buffers& buffers() { return *buffers_; }

 private:
  std::unique_ptr<Buffers> buffers_;
};

// Appends the rank's nodes to model->nodes. compute_ops: logical indices of the rank's compute ops;
// comm_ops: its communication ops. Sets LogicalOp::first_node and, for compute ops, ::own.
// step_start_s / step_end_s: the rank's step start and mark (seconds since t0); a negative
// step_end_s means unknown.
void build_rank_chain(StepModel* model, RankChainScratch* scratch, int rank, const std::vector<int>& compute_ops,
                      const std::vector<CommStreamOp>& comm_ops, double step_start_s,
                      double step_end_s, double eps);

}  // namespace sp::online
