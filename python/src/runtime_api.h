// Which runtime instance the extension talks to. libstraggler_probe.so may already be in the
// process (LD_PRELOAD, for CUPTI and NCCL capture); then the Python hooks' events, step marks and
// summaries must go to that one instance, not to the copy of the runtime linked into this module,
// or a step would be split between two. So every C ABI call goes through this table: the
// preloaded library's exported functions when they are there (same ABI version), else the
// built-in copy (linked statically, its symbols hidden by --exclude-libs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "straggler_probe/probe.h"

namespace sp::pyext {

struct RuntimeApi {
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
  int (*set_clock_offset)(int64_t);
  int (*pop_summary)(void*, size_t, size_t*, int32_t);
  int (*get_stats)(sp_stats*);
  const char* (*last_warning)();
  bool preloaded = false;  // true: the functions are libstraggler_probe.so's, already loaded
};

// Resolved once, on first use (thread-safe).
const RuntimeApi& runtime();

}  // namespace sp::pyext
