// Every NCCL operation the probe records goes out through here: to the runtime, and into a small
// ring of recent operations that diagnostics read (sp_nccl_recent_ops).
#pragma once

#include <cstddef>

#include "straggler_probe/probe.h"

namespace sp::nccl {

int emit_nccl_event(const sp_event& ev);
size_t recent_nccl_events(sp_event* out, size_t capacity);

}  // namespace sp::nccl
