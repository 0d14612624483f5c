// The stand-down rule of the native step sources (the NCCL operation sequence in interposer_recorder.cpp,
// an NVTX range in nvtx_steps.cpp): a source marks steps only while it is the only producer.
//
// While it is, the runtime's current step label equals the number of marks the source made
// (labels start at 0 and each mark opens the next). Any other label means someone else marked a
// step (the straggler_probe package at optimizer.step(), the application through sp_mark_step);
// from then on the source marks nothing, since two producers would split every step in two.
// Not thread-safe: the owner holds its lock.
#pragma once

#include <cstdint>

#include "straggler_probe/event_sink.h"

namespace sp::preload {

class OwnStepMarks {
 public:
  // Whether the source may still mark, given the runtime's current step label (negative: no
  // runtime in this image, which shows nothing). The first label that shows a foreign mark makes
  // it stand down for good; *stood_down_now is set that one time, for the caller to say so once.
  bool sole_producer(int64_t label, bool* stood_down_now) {
    if (stood_down_) return false;
    if (label >= 0 && label != static_cast<int64_t>(marks_made_)) {
      stood_down_ = true;
      *stood_down_now = true;
      return false;
    }
    return true;
  }

  // Ends step `label` through the runtime, counted as this source's mark when the runtime took it.
  bool mark(int64_t label) {
    if (!gpu::runtime_mark_step(label)) return false;
    ++marks_made_;
    return true;
  }

 private:
  uint64_t marks_made_ = 0;
  bool stood_down_ = false;
};

}  // namespace sp::preload
