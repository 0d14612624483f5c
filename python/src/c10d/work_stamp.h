// straggler_probe._c10d.stamp_completion(work): the moment a c10d Work's future completes,
// stamped by a C++ callback on the backend's thread, for the training thread to read later.
//
// Why: a Python callback on the future (what hooks/open_works.py did) runs on the backend's
// thread and must take the GIL from the training thread, ~50-80 us of the training thread's time
// per collective (bench/README.md, per_op_cost). The stamp's callback takes no GIL and touches
// nothing but one atomic; the training thread reads it at the op's wait, at its next op through
// the process-group layer, after backward and at the step boundary, and records the op then with
// the stamped end.
#pragma once

#include <pybind11/pybind11.h>

namespace sp::pyext {

// Adds WorkStamp (read-only `end_ns`: CLOCK_REALTIME ns of the future's completion, what
// time.time_ns() reads, or of the first read that found it complete before its callback ran;
// 0 while not complete) and stamp_completion(work) -> WorkStamp | None
// (None: the work has no future, e.g. gloo's p2p) to the module.
void bind_work_stamps(pybind11::module_& m);

}  // namespace sp::pyext
