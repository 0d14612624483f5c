// Starting, completing and emitting the plugin's operations (profiler_plugin_core.h explains the
// event order and the CUDA-graph rule). Called by the entry points in profiler_plugin_core.cpp.
#pragma once

#include <cstdint>

#include "plugin/core/plugin_handles.h"

namespace sp::nccl::plugin {

int start_op(Context* ctx, void** handle, const EventDesc& d);
int start_channel(void** handle, const EventDesc& d);
void stop_op(OpHandle* h);
void stop_channel(ChannelHandle* ch);

enum class Ending : uint8_t {
  kCompleted,  // all its channels stopped (GPU times), or it has none (CPU times)
  kSwept,      // given up: its channels never all reported (CPU times)
};
// Emits the operation and returns the handle to the pool; only its owner (who retired it,
// plugin_op_state.h) calls this.
void emit_and_free(OpHandle* h, Ending how);

// The timed sweep: emits, with CPU times, operations NCCL stopped more than `older_than_ns`
// ago whose channels never started (none in flight), as of `now` (the plugin's clock).
void sweep(uint64_t now, uint64_t older_than_ns);
// Runs the sweep when its period (1 s) has passed since the last one: called by the start and
// stop of operations with the time they read anyway, so it costs one relaxed load otherwise.
void sweep_if_due(uint64_t now);
// The communicator ends: its operations waiting for channels are emitted (CPU times), its
// captured operations' handles given back.
void finalize_ops(const Context* ctx);

}  // namespace sp::nccl::plugin
