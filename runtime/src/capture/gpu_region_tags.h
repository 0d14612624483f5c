// CPU-timed regions tag the GPU work they launch: sp_region_begin / sp_region_end push and pop the
// region on CUPTI's external-correlation stack (cupti/: sp_cupti_region_push / _pop), so that the
// kernels inside come back attributed to the region and the online analysis gets the region's GPU
// span too.
//
// The GPU layer is optional: these are weak references, set when cupti/'s objects are linked into
// the same image (libstraggler_probe.so) and null where only the runtime core is (its unit tests,
// the Python extension's built-in copy), in which case regions are CPU-timed only. Declared with
// default visibility, like their definitions, so that referencing them never hides the exports.
#pragma once

#include <cstdint>

extern "C" {
__attribute__((weak, visibility("default"))) int sp_cupti_region_push(uint32_t kind,
                                                                      int32_t microbatch,
                                                                      uint32_t name_id);
__attribute__((weak, visibility("default"))) void sp_cupti_region_pop(void);
}
