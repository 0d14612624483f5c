// The C ABI table: which runtime instance straggler_probe._core talks to. There must be one per
// process: the Python hooks' events and step marks, the CUPTI kernels and NCCL operations
// captured by libstraggler_probe.so (LD_PRELOAD, or NCCL_PROFILER_PLUGIN, which NCCL dlopens
// later) and the summaries the transport sends all belong to the same steps. So every C ABI call
// of the module goes through this table, and the rank pipeline it starts gets its few calls from
// it too (pipeline_calls), bound to libstraggler_probe.so in every mode:
//   1. "preloaded": its exported functions are already in the global scope (LD_PRELOAD);
//   2. "shared": it is loaded (or now loaded, RTLD_LOCAL) by path: $STRAGGLER_PROBE_LIB, else the
//      copy installed next to this module, else the build tree's (RTLD_NOLOAD first, so a copy
//      NCCL already loaded is reused; a later dlopen of the same file returns the same one);
//   3. "built-in": only when it cannot be loaded (one warning), the copy of the runtime linked
//      into this module (statically, its symbols hidden by --exclude-libs). No GPU capture then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "straggler_probe/gpu/cupti_c_api.h"
#include "straggler_probe/probe.h"
#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::pyext {

struct RuntimeTable {
  uint32_t (*abi_version)();
  void (*config_init)(sp_config*);
  int (*init)(const sp_config*);
  int (*shutdown)();
  int (*is_enabled)();
  uint64_t (*now_ns)();
  uint32_t (*intern)(const char*);
  uint64_t (*region_begin)(uint32_t, int32_t, uint32_t);
  int (*region_end)(uint64_t);
  int (*record)(const sp_event*);
  int (*mark_step)(int64_t);
  int (*annotate)(int32_t, const char*, const char*);
  int (*flush)();
  int (*set_topology)(int32_t, int32_t);
  int (*set_rank)(int32_t, int32_t);
  int (*set_clock_offset)(int64_t);
  int (*pop_summary)(void*, size_t, size_t*, int32_t);
  int (*get_stats)(sp_stats*);
  const char* (*last_warning)();
  // GPU capture (cupti_c_api.h): only in libstraggler_probe.so built with CUDA; all null
  // otherwise (the built-in copy has none).
  int (*cupti_start)() = nullptr;
  int (*cupti_pause)(const char*) = nullptr;
  int (*cupti_resume)() = nullptr;
  int (*cupti_get_stats)(sp_cupti_stats*) = nullptr;
  int (*cupti_region_push)(uint32_t, int32_t, uint32_t) = nullptr;
  void (*cupti_region_pop)() = nullptr;
  size_t (*cupti_report)(char*, size_t, uint32_t) = nullptr;
  int (*gpu_graph_capture)(int) = nullptr;  // optional: libraries before graph support lack it
  int (*get_heartbeat)(sp_heartbeat*) = nullptr;  // optional: libraries before heartbeats lack it
  // Optional: libraries before /control's pause lack them.
  int (*set_recording_paused)(int) = nullptr;
  int (*get_pause_state)(sp_pause_state*) = nullptr;

  const char* source = "built-in";  // "preloaded", "shared" or "built-in"
  std::string library;              // the libstraggler_probe.so in use; empty when built-in
  std::string warning;              // why it is not used (built-in); empty otherwise
};

// Resolved once, on first use (thread-safe). Prints the warning, if any, once.
const RuntimeTable& runtime();

// The calls the rank pipeline makes, from the table.
rank_pipeline::RuntimeCalls pipeline_calls(const RuntimeTable& table);

}  // namespace sp::pyext
