// straggler_probe._c10d.GroupObserver: a process group's collectives observed in C++, through
// torch's ProcessGroup pre/post hooks (registerPreHook / registerPostHook, torch >= 2.15), and
// recorded into the runtime from C++ with no Python and no GIL.
//
// Why: the Python pre/post hooks (hooks/process_group.py) cost a gloo DDP job's training thread
// ~40 + 12 us per bucket, run cold between the backward's kernels (bench/README.md, "Per-step cost
// against a never-probed process"): ~9% of a launch-bound step at 13 buckets. Here a collective's
// issue is a timestamp, a payload size and a sequence number on the issuing thread, and its end a
// record made by a callback on its future (the backend's thread), with its start, sequence number
// and stream taken at the issue.
//
// What stays in Python: sends and receives (their micro-batch comes from the recorder's state and
// a pipeline schedule's tags), handed to the `p2p_pre` / `p2p_post` callables under the GIL; ops a
// by-name wrapper records itself (hooks/collectives.py: it brackets its call with
// wrapper_enter() / wrapper_exit(), a C++ thread-local); ops of kinds the table does not classify
// (counted as seen, not recorded, as in Python).
//
// A collective's end: its future's completion (a C++ callback); without a future (gloo's
// reduce-scatter) the end of a Python wait() on it (work_waited), else at a step boundary
// (settle_works: complete by now, or given up after UNWAITED_STEPS steps, so the table stays
// bounded). Only the first end is recorded.
#pragma once

#include <pybind11/pybind11.h>

namespace sp::pyext {

// Adds GroupObserver, hook_op_names(), wrapper_enter(), wrapper_exit(), work_waited(),
// settle_works() and open_futureless() to the module; `observes_groups` says whether torch has
// the hooks this needs (False: the Python hooks stay in charge).
void bind_group_observer(pybind11::module_& m);

}  // namespace sp::pyext
