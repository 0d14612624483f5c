// Starting, completing and emitting the plugin's operations (profiler_plugin_core.h explains the
// event order and the CUDA-graph rule). Called by the entry points in profiler_plugin_core.cpp.
#pragma once

#include "plugin/plugin_handles.h"

namespace sp::nccl::plugin {

int start_op(Context* ctx, void** handle, const EventDesc& d);
int start_channel(void** handle, const EventDesc& d);
void stop_op(OpHandle* h);
void stop_channel(ChannelHandle* ch);
// Emits the operation once (whoever completes it first) and returns the handle to the pool;
// `swept`: its channels never all reported, so host times.
void emit_and_free(OpHandle* h, bool swept);

}  // namespace sp::nccl::plugin
