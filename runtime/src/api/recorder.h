// The recording path: what sp_record, sp_region_begin/end and sp_mark_step do on the calling
// thread. Lock-free and allocation-free once the thread is bound to its slot; the first call of
// a thread in a session binds it (claims a slot, allocates its ring: the only slow path).
#pragma once

#include <cstdint>

#include "straggler_probe/probe.h"

namespace sp::runtime {

int record_event(const sp_event& ev) noexcept;
uint64_t begin_region(uint32_t kind, int32_t microbatch, uint32_t name_id) noexcept;
int end_region(uint64_t token) noexcept;
int mark_step(int64_t step) noexcept;
// Destructor of Probe::thread_exit_key: the calling thread is exiting and leaves its slot.
void on_thread_exit(void* slot) noexcept;

// Tokens: the slot index (+1) in the low 16 bits, the region's per-thread serial above.
inline constexpr uint64_t kTokenSlotBits = 16;

}  // namespace sp::runtime
