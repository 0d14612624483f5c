// Every NCCL operation the probe records goes out through here: to the runtime, and into a small
// ring of recent operations that diagnostics read (sp_nccl_recent_ops); its name comes from here.
#pragma once

#include <cstddef>

#include "straggler_probe/probe.h"

namespace sp::nccl {

int emit_nccl_event(const sp_event& ev);
size_t recent_nccl_events(sp_event* out, size_t capacity);

// The interned name of such an event: "ncclAllReduce"-style for an operation of this type,
// "ncclGroup" for a group of mixed types. Interned at first use, then kept (one table for the
// interposer and the profiler plugin).
uint32_t nccl_event_name(sp_coll_type coll, bool mixed_group = false);
// The name of a one-sided operation (NCCL 2.29): "ncclPutSignal" (a SEND with bytes), "ncclSignal"
// (a SEND without), "ncclWaitSignal" (a RECV).
uint32_t nccl_one_sided_name(sp_coll_type coll, uint64_t bytes);
// Tests: the runtime's name table was reset, so intern again.
void forget_nccl_event_names_for_tests();

}  // namespace sp::nccl
