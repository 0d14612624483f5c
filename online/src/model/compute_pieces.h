// A rank's compute ops as time-ordered pieces, the part of build_rank_chain (rank_chain.h) that
// works on the compute ops: nesting resolved, pieces cut where communication ops are launched, and
// the time an op spent blocked on its own collectives taken out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "rank_chain.h"
#include "step_model.h"

namespace sp::online {

// A compute op's interval after nesting has been resolved.
struct Span {
  int logical = 0;
  double s = 0, e = 0;
};

// A stretch of time owned by one compute op (the innermost one running then).
struct Piece {
  int owner = 0;  // logical op
  double s = 0, e = 0;
  bool removed = false;           // time the op spent blocked on its own collectives
  std::vector<int> waits_for;     // logical comm ops this piece waits for
};

// cut_compute_ops' working arrays, kept from one rank to the next (a rank needs a dozen small
// arrays; allocated and freed per rank, the allocator's bookkeeping cost ~36 M instructions a
// step at 4096 ranks).
struct ComputeScratch {
  struct Frame {
    int span;
    size_t next_child;
    double pos;
  };
  std::vector<Span> spans;
  std::vector<int> roots, stack, parent, child_begin, children;  // the nesting forest, CSR
  std::vector<Frame> frames;
  std::vector<Piece> flat, kept;
  std::vector<int> positive;
  std::vector<char> has_piece;
  std::vector<double> launches, op_end;
  std::vector<std::pair<int, int>> launch_of;  // (compute logical, comm position)
  std::vector<int> cs, waited;
};

// The rank's compute ops as pieces in time order into *pieces. Adds to *clamped the compute ops
// clipped to the op they are nested in; sets (*consumed)[c] for the comm ops (positions in
// comm_ops) that a piece waits for.
void cut_compute_ops(const StepModel& m, const std::vector<int>& compute_ops, const std::vector<CommStreamOp>& comm_ops,
                  double eps, ComputeScratch* scratch, std::vector<Piece>* pieces, std::vector<char>* consumed,
                  uint64_t* clamped);

// The latest piece (not removed) that ends by time t: what an op launched at t depends on; -1
// if none. Pieces are in start order and do not overlap, so it is at or just before the last
// piece that starts by t. Inline: called for every comm op twice, from two files.
inline int piece_ending_by(const std::vector<Piece>& pieces, double t, double eps) {
  auto it = std::upper_bound(pieces.begin(), pieces.end(), t + eps, [](double v, const Piece& p) { return v < p.s; });
  for (int i = static_cast<int>(it - pieces.begin()) - 1; i >= 0; --i) {
    if (!pieces[i].removed && pieces[i].e <= t + eps) return i;
  }
  return -1;
}

}  // namespace sp::online
