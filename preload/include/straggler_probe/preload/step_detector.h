// Training-step boundaries found without Python, from the sequence of NCCL operations.
//
// STRAGGLER_PROBE_STEP_MARKER chooses how:
//   auto (default)  the period of the operation sequence: a training step issues the same
//                   collectives in the same order every step, so once the sequence of operation
//                   signatures (type, communicator, bytes) repeats min_repeats times with period P,
//                   every P-th operation starts a step; the phase is where the CPU gap between
//                   consecutive operations is largest on average (the forward pass / data loading
//                   between the last collective of one step and the first of the next);
//   every:N         a step every N operations;
//   <Op>[:<bytes>]  a step ends after each operation of that type (and size), e.g. AllReduce or
//                   AllReduce:4096 (Op as NCCL names it: AllReduce, AllGather, ReduceScatter,
//                   Broadcast, Reduce, AlltoAll, Send, Recv);
//   off             no automatic steps (the Python package or the application marks them).
// The detector is pure (no clocks, no globals): the interposer feeds it and acts on its answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "straggler_probe/probe.h"

namespace sp::preload {

struct StepMarker {
  enum class Mode { kAuto, kEveryN, kOp, kOff } mode = Mode::kAuto;
  uint64_t every = 0;
  sp_coll_type op = SP_COLL_NONE;
  uint64_t bytes = 0;  // 0: any size
};

// Parses a marker spec; false with a one-line error naming the problem.
bool parse_step_marker(const char* spec, StepMarker* out, std::string* error);

struct StepDetectorOptions {
  size_t history = 1024;
  size_t max_period = 256;
  uint32_t min_repeats = 3;
  size_t min_window = 24;       // a period must hold over at least this many operations, so that a
                                // short run of identical operations is not taken for period 1
  uint32_t max_mismatches = 2;  // consecutive deviations before the period is given up
};

class StepDetector {
 public:
  enum class Boundary { kNone, kBefore, kAfter };

  explicit StepDetector(StepMarker marker = {}, StepDetectorOptions opts = {});

  // One finished operation. kBefore: a step ended just before this operation (it opens the next
  // step); kAfter: a step ends with this operation.
  Boundary on_op(sp_coll_type type, uint64_t group_id, uint64_t bytes, uint64_t cpu_start_ns,
                 uint64_t cpu_end_ns);

  size_t period() const { return period_; }
  uint64_t boundaries() const { return boundaries_; }
  const StepMarker& marker() const { return marker_; }

 private:
  struct Entry {
    uint64_t signature;
    uint64_t gap_before_ns;
  };
  void try_detect();
  Entry at(size_t back) const;  // 0 = newest

  StepMarker marker_;
  StepDetectorOptions opts_;
  std::vector<Entry> ring_;
  size_t head_ = 0;
  uint64_t count_ = 0;
  uint64_t last_end_ns_ = 0;
  size_t period_ = 0;
  std::vector<uint64_t> pattern_;  // signature expected at absolute index i: pattern_[i % period_]
  size_t phase_ = 0;          // index (mod period) of the operation that opens a step
  uint64_t since_detect_ = 0;
  uint32_t mismatches_ = 0;
  uint64_t boundaries_ = 0;
};

}  // namespace sp::preload
