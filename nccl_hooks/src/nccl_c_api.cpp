// The C ABI over the interposer's and the plugin's counters. Guarded like every entry point
// (straggler_probe/c_abi_guard.h): no exception crosses it.
#include "straggler_probe/gpu/nccl_c_api.h"

#include <cstring>

#include "interposer/interposer_recorder.h"
#include "nccl_emit.h"
#include "plugin/core/profiler_plugin_core.h"
#include "straggler_probe/c_abi_guard.h"

extern "C" {

int sp_nccl_get_stats(sp_nccl_stats* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  return sp::runtime::guarded("sp_nccl_get_stats", static_cast<int>(SP_ERR_INTERNAL), [&] {
    const sp::nccl::InterposerStats interposer = sp::nccl::InterposerRecorder::instance().stats();
    const sp::nccl::PluginStats plugin = sp::nccl::plugin_stats();
    sp_nccl_stats s{};
    s.struct_size = sizeof(s);
    s.plugin_active = sp::nccl::InterposerRecorder::instance().plugin_active() ? 1 : 0;
#define SP_COPY(field, source, counter) s.field = source.counter;
    SP_NCCL_STATS_FIELDS(SP_COPY)
#undef SP_COPY
    const size_t n =
        out->struct_size != 0 && out->struct_size < sizeof(s) ? out->struct_size : sizeof(s);
    std::memcpy(out, &s, n);
    return static_cast<int>(SP_OK);
  });
}

size_t sp_nccl_recent_ops(sp_event* out, size_t capacity) {
  return sp::runtime::guarded("sp_nccl_recent_ops", size_t{0},
                              [&] { return sp::nccl::recent_nccl_events(out, capacity); });
}

}  // extern "C"
