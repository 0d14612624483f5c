// The C ABI over the interposer's and the plugin's counters. No exceptions cross it.
#include "straggler_probe/gpu/nccl_c_api.h"

#include <cstring>

#include "interposer/interposer_recorder.h"
#include "nccl_emit.h"
#include "plugin/profiler_plugin_core.h"

extern "C" {

int sp_nccl_get_stats(sp_nccl_stats* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  try {
    const sp::nccl::InterposerStats i = sp::nccl::InterposerRecorder::instance().stats();
    const sp::nccl::PluginStats p = sp::nccl::plugin_stats();
    sp_nccl_stats s{};
    s.struct_size = sizeof(s);
    s.plugin_active = sp::nccl::InterposerRecorder::instance().plugin_active() ? 1 : 0;
    s.recorded = i.recorded;
    s.folded_groups = i.folded_groups;
    s.passthrough = i.passthrough;
    s.failed_calls = i.failed_calls;
    s.graph_captured = i.graph_captured;
    s.in_progress = i.in_progress;
    s.steps_marked = i.steps_marked;
    s.cuda_event_timed = i.cuda_event_timed;
    s.cuda_event_fallbacks = i.cuda_event_fallbacks;
    s.plugin_contexts = p.contexts;
    s.plugin_ops = p.ops_emitted;
    s.plugin_ops_gpu_timed = p.ops_gpu_timed;
    s.plugin_ops_swept = p.ops_swept;
    const size_t n =
        out->struct_size != 0 && out->struct_size < sizeof(s) ? out->struct_size : sizeof(s);
    std::memcpy(out, &s, n);
    return SP_OK;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

size_t sp_nccl_recent_ops(sp_event* out, size_t capacity) {
  return sp::nccl::recent_nccl_events(out, capacity);
}

}  // extern "C"
