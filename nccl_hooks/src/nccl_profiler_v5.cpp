// NCCL profiler plugin API v5 (NCCL 2.28): 64-bit event types, API-level events, and the
// KernelLaunch event that brackets NCCL's cuLaunchKernelEx on the launching thread, where the
// probe pushes a CUPTI external correlation id so that CUPTI's record of the NCCL kernel is
// tagged. Collective/p2p/KernelCh handling is v4's.
#include "nccl_op_names.h"
#include "nccl_profiler_api.h"
#include "profiler_plugin_core.h"

namespace sp::nccl {
namespace {

api::Result init_v5(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                    int nnodes, int nranks, int rank, api::DebugLogger) {
  PluginInit init;
  init.version = 5;
  init.comm_hash = comm_id;
  init.comm_hash_known = true;
  init.comm_name = comm_name;
  init.nnodes = nnodes;
  init.nranks = nranks;
  init.rank = rank;
  return plugin_init(context, mask, init);
}

api::Result start_v5(void* context, void** handle, api::DescrV5* e) {
  if (e == nullptr) {
    *handle = nullptr;
    return 0;
  }
  EventDesc d;
  d.type = e->type;
  d.parent = e->parentObj;
  d.rank = e->rank;
  if (e->type == kProfileColl) {
    d.coll = coll_type_by_name(e->coll.func);
    d.count = e->coll.count;
    d.datatype_size = datatype_size_by_name(e->coll.datatype);
    d.root = e->coll.root;
    d.channels = e->coll.nChannels;
  } else if (e->type == kProfileP2p) {
    d.coll = coll_type_by_name(e->p2p.func);
    d.count = e->p2p.count;
    d.datatype_size = datatype_size_by_name(e->p2p.datatype);
    d.peer = e->p2p.peer;
    d.channels = e->p2p.nChannels;
  } else if (e->type == kProfileKernelCh) {
    d.channel = e->kernelCh.channelId;
    d.gpu_timer = e->kernelCh.pTimer;
    d.has_gpu_timer = true;
  }
  return plugin_start_event(context, handle, d);
}

api::Result record_v5(void* handle, int state, api::StateArgsV5* args) {
  const bool timer = state == kStateKernelChStop && args != nullptr;
  return plugin_record_state(handle, state, timer ? args->kernelCh.pTimer : 0, timer);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) sp::nccl::api::ProfilerV5 ncclProfiler_v5 = {
    "straggler_probe",           sp::nccl::init_v5,   sp::nccl::start_v5,
    sp::nccl::plugin_stop_event, sp::nccl::record_v5, sp::nccl::plugin_finalize,
};
}
