// The plugin's entry points, version-independent: what NCCL's startEvent / stopEvent /
// recordEventState / init / finalize do with each event type (operations themselves are
// plugin_operations.cpp's, handles plugin_handles.cpp's).
#include "plugin/core/profiler_plugin_core.h"

#include <string>

#include "comm_registry.h"
#include "interposer/interposer_recorder.h"
#include "nccl_emit.h"
#include "plugin/core/plugin_handles.h"
#include "plugin/core/plugin_operations.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/capture_hooks.h"
#include "straggler_probe/log.h"
#include "straggler_probe/preload/activation.h"

namespace sp::nccl {

namespace log = runtime::log;
using plugin::pools;

namespace {

thread_local uint32_t tl_launch_pushes = 0;

// The events asked for: operations, and from v4 their channels' GPU timers; from v5 the kernel
// launch (CUPTI tagging) and the API events that say which calls are captured into CUDA graphs;
// from v6 copy-engine collectives. No proxy or network events: overhead.
int activation_mask_for(int version) {
  int mask = kProfileColl | kProfileP2p;
  if (version >= 4) mask |= kProfileKernelCh;
  if (version >= 5) mask |= kProfileKernelLaunch | kProfileCollApi | kProfileP2pApi;
  if (version >= 6) mask |= kProfileCeColl;
  return mask;
}

}  // namespace

int plugin_init(void** context, int* activation_mask, const PluginInit& init) {
  const preload::Activation& a = preload::activate();
  auto* ctx = new plugin::Context();
  ctx->version = init.version;
  ctx->rank = init.rank;
  ctx->nranks = init.nranks;
  ctx->comm_hash = init.comm_hash;
  ctx->hash_known = init.comm_hash_known;
  ctx->record = a.is_rank && preload::recording_allowed();
  ctx->comm = comm_registry().add(ctx, init.comm_hash, init.rank, init.nranks,
                                  init.comm_hash_known);
  *context = ctx;
  pools().contexts.fetch_add(1, std::memory_order_relaxed);
  if (activation_mask != nullptr) {
    int mask = 0;
    if (ctx->record) {
      mask = activation_mask_for(init.version);
      // The plugin records NCCL operations: the interposer (if preloaded too) steps aside.
      InterposerRecorder::instance().set_plugin_active(true);
      gpu::capture_start();
    }
    // One process-wide mask: never narrow what another communicator's context asked for.
    *activation_mask |= mask;
  }
  log::info("NCCL profiler plugin v" + std::to_string(init.version) + " attached to " +
            (init.comm_name != nullptr ? std::string(init.comm_name) : std::string("a comm")) +
            " (rank " + std::to_string(init.rank) + "/" + std::to_string(init.nranks) + ")");
  return 0;
}

int plugin_start_event(void* context, void** handle, const EventDesc& d) {
  *handle = nullptr;
  auto* ctx = static_cast<plugin::Context*>(context);
  if (ctx == nullptr || ctx->tag != plugin::kTagContext || !ctx->record ||
      preload::in_forked_child()) {
    return 0;
  }
  switch (d.type) {
    case kProfileColl:
    case kProfileP2p:
      return plugin::start_op(ctx, handle, d);
    case kProfileCeColl:  // v6: no kernel, no channels; CPU times around the enqueue
      pools().ce_ops.fetch_add(1, std::memory_order_relaxed);
      return plugin::start_op(ctx, handle, d);
    case kProfileKernelCh:
      return plugin::start_channel(handle, d);
    case kProfileCollApi:
    case kProfileP2pApi:
      // Only to learn whether the call is captured: its Coll / P2p names this as its parent.
      *handle = d.graph_captured ? &plugin::g_api_captured : &plugin::g_api_live;
      return 0;
    case kProfileKernelLaunch:
      // Tag the NCCL kernel for CUPTI: the launch happens between start and stop, on this thread.
      gpu::tag_nccl_op(pools().next_launch.fetch_add(1));
      ++tl_launch_pushes;
      *handle = &plugin::g_kernel_launch;
      return 0;
    default:
      return 0;  // not tracked: a null handle makes NCCL skip its later calls
  }
}

int plugin_record_state(void* handle, int state, uint64_t gpu_timer, bool has_gpu_timer) {
  if (handle == nullptr) return 0;
  const uint64_t type = *static_cast<uint64_t*>(handle);
  if (type == kProfileKernelCh && state == kStateKernelChStop && has_gpu_timer) {
    static_cast<plugin::ChannelHandle*>(handle)->stop = gpu_timer;
  }
  return 0;
}

int plugin_stop_event(void* handle) {
  if (handle == nullptr) return 0;
  const uint64_t type = *static_cast<uint64_t*>(handle);
  if (type == kProfileColl || type == kProfileP2p || type == kProfileCeColl) {
    plugin::stop_op(static_cast<plugin::OpHandle*>(handle));
  } else if (type == kProfileKernelCh) {
    plugin::stop_channel(static_cast<plugin::ChannelHandle*>(handle));
  } else if (type == kProfileKernelLaunch) {
    if (tl_launch_pushes > 0) {
      --tl_launch_pushes;
      gpu::untag_nccl_op();
    }
  }
  return 0;  // CollApi / P2pApi: nothing to do
}

int plugin_finalize(void* context) {
  auto* ctx = static_cast<plugin::Context*>(context);
  if (ctx == nullptr || ctx->tag != plugin::kTagContext) return 0;
  comm_registry().remove(ctx);
  // Operations of this communicator still waiting for channels are emitted now, and its captured
  // operations' handles freed: no more events come for them after finalize.
  plugin::finalize_ops(ctx);
  ctx->tag = 0;
  // The context itself is leaked: a proxy thread may still hold a handle pointing at it.
  return 0;
}

void plugin_sweep(uint64_t older_than_ns) { plugin::sweep(plugin::now_ns(), older_than_ns); }

void plugin_set_sweep_for_tests(uint64_t older_than_ns, uint64_t period_ns, uint64_t (*clock)()) {
  plugin::Pools& p = pools();
  p.sweep_after_ns = older_than_ns;
  p.sweep_period_ns = period_ns;
  p.clock = clock;
  p.next_sweep_ns = 0;
}

PluginStats plugin_stats() {
  plugin::Pools& p = pools();
  PluginStats s;
#define SP_LOAD(name) s.name = p.name.load();
  SP_PLUGIN_COUNTERS(SP_LOAD)
#undef SP_LOAD
  return s;
}

void plugin_reset_for_tests() {
  pools().reset_for_tests();
  forget_nccl_event_names_for_tests();
}

}  // namespace sp::nccl
