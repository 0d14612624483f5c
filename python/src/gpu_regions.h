// The Python probe's regions on the GPU: forward / backward / optimizer push their identity on
// CUPTI's external-correlation stack (sp_cupti_region_push / _pop of libstraggler_probe.so) so
// that their kernels are attributed to them, and at exit rank 0's report gets the top kernels per
// region (sp_cupti_report). The functions come from the runtime table (runtime_table.h), bound to
// the same libstraggler_probe.so as the rest of the C ABI; the built-in copy of the runtime has no
// GPU capture, and then these are no-ops.
#pragma once

#include <pybind11/pybind11.h>

namespace sp::pyext {

// Adds has_gpu_capture(), cupti_start() -> bool, cupti_region_push(kind, microbatch, name_id) -> bool,
// cupti_region_pop() and cupti_report(top_k) -> str to the module.
void bind_gpu_regions(pybind11::module_& m);

}  // namespace sp::pyext
