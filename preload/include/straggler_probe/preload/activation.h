// Start-up of the GPU-capture layers inside a process, on the first NCCL entry (an interposed
// call or the profiler plugin's init), never at library load.
//
// Decides once whether this process is a training rank (launcher environment). A process that is
// not (the torchrun agent, a spawned data-loader worker, any program that inherited LD_PRELOAD)
// is left alone: calls pass straight through, nothing is recorded, nothing is printed. A rank
// starts the runtime (sp_init from the environment), CUPTI capture and reads the step marker.
// A forked child (fork without exec, e.g. a data-loader worker) records nothing: the parent's
// threads and CUPTI state do not exist in it.
#pragma once

#include "straggler_probe/preload/rank_env.h"
#include "straggler_probe/preload/step_detector.h"

namespace sp::preload {

struct Activation {
  bool is_rank = false;
  RankEnv env;
  StepMarker marker;
};

// Idempotent and thread-safe; the first call does the work.
const Activation& activate();
// True after activation in a rank that has not forked since (the hot-path check).
bool recording_allowed();
bool in_forked_child();

// Tests: forget the activation (reads the environment again next time).
void reset_activation_for_tests();

}  // namespace sp::preload
