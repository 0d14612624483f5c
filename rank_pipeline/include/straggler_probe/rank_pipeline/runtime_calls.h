// The runtime calls the pipeline makes, and nothing else: where its steps come from (the summary
// queue), its heartbeat, its clock and offset, its counters, the pause /control asks for, and the
// GPU capture's report. They are function pointers because there must be one runtime per process
// and the pipeline does not choose it: whoever starts a RankPipeline does. The Python binding
// passes the C ABI table it bound (python/src/runtime_table.h: a preloaded or loaded
// libstraggler_probe.so, else the copy linked into the module); a C++ program or test that links
// the runtime passes linked_runtime_calls().
#pragma once

#include <cstddef>
#include <cstdint>

#include "straggler_probe/gpu/cupti_c_api.h"
#include "straggler_probe/probe.h"

namespace sp::rank_pipeline {

struct RuntimeCalls {
  // Required (check_runtime_calls): the steps and the clock.
  int (*pop_summary)(void*, size_t, size_t*, int32_t) = nullptr;
  uint64_t (*now_ns)() = nullptr;
  int (*set_clock_offset)(int64_t) = nullptr;
  int (*get_stats)(sp_stats*) = nullptr;
  // Optional: a runtime without them has no heartbeat (no hang watch from this rank), no pause,
  // no GPU capture section.
  int (*get_heartbeat)(sp_heartbeat*) = nullptr;
  int (*set_recording_paused)(int) = nullptr;
  int (*get_pause_state)(sp_pause_state*) = nullptr;
  int (*cupti_get_stats)(sp_cupti_stats*) = nullptr;
  size_t (*cupti_report)(char*, size_t, uint32_t) = nullptr;
};

// The runtime linked into this binary (sp_runtime_core): every call filled but the GPU ones
// (the linked core has no GPU capture).
RuntimeCalls linked_runtime_calls();

// "" when the required calls are there, else which is missing.
const char* missing_runtime_call(const RuntimeCalls& calls);

}  // namespace sp::rank_pipeline
