// NCCL profiler plugin API v4 (NCCL 2.27): the communicator's identity comes with init, and
// KernelCh events carry the GPU %globaltimer of each channel's start (descriptor) and stop
// (KernelChStop state), the operation's GPU times.
#include "nccl_op_names.h"
#include "nccl_profiler_api.h"
#include "profiler_plugin_core.h"

namespace sp::nccl {
namespace {

api::Result init_v4(void** context, int* mask, const char* comm_name, uint64_t comm_hash,
                    int nnodes, int nranks, int rank, api::DebugLogger) {
  PluginInit init;
  init.version = 4;
  init.comm_hash = comm_hash;
  init.comm_hash_known = true;
  init.comm_name = comm_name;
  init.nnodes = nnodes;
  init.nranks = nranks;
  init.rank = rank;
  return plugin_init(context, mask, init);
}

api::Result start_v4(void* context, void** handle, api::DescrV4* e) {
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

api::Result record_v4(void* handle, int state, api::StateArgsV4* args) {
  const bool timer = state == kStateKernelChStop && args != nullptr;
  return plugin_record_state(handle, state, timer ? args->kernelCh.pTimer : 0, timer);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) sp::nccl::api::ProfilerV4 ncclProfiler_v4 = {
    "straggler_probe",           sp::nccl::init_v4,   sp::nccl::start_v4,
    sp::nccl::plugin_stop_event, sp::nccl::record_v4, sp::nccl::plugin_finalize,
};
}
