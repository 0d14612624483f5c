// NCCL profiler plugin API v1 (NCCL 2.23): function and datatype are enum numbers.
// The communicator is identified per event (commHash); operations get host times around NCCL's
// enqueue only (GPU times need API v4).
#include "nccl_op_names.h"
#include "nccl_profiler_api.h"
#include "profiler_plugin_core.h"

namespace sp::nccl {
namespace {

api::Result init_v1(void** context, int* mask) {
  PluginInit init;
  init.version = 1;
  return plugin_init(context, mask, init);
}

api::Result start_v1(void* context, void** handle, api::DescrV1* e) {
  if (e == nullptr) {
    *handle = nullptr;
    return 0;
  }
  EventDesc d;
  d.type = e->type;
  d.parent = e->parentObj;
  d.rank = e->rank;
  if (e->type == kProfileColl) {
    d.coll = coll_type_by_func_id(e->coll.func);
    d.count = e->coll.count;
    d.datatype_size = datatype_size(e->coll.datatype);
    d.root = e->coll.root;
    d.comm_hash = e->coll.commHash;
  } else if (e->type == kProfileP2p) {
    d.coll = coll_type_by_func_id(e->p2p.func);
    d.count = e->p2p.count;
    d.datatype_size = datatype_size(e->p2p.datatype);
    d.peer = e->p2p.peer;
    d.comm_hash = e->p2p.commHash;
  }
  return plugin_start_event(context, handle, d);
}

api::Result record_v1(void* handle, int state, api::StateArgsV1*) {
  return plugin_record_state(handle, state, 0, false);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) sp::nccl::api::ProfilerV1 ncclProfiler_v1 = {
    "straggler_probe",         sp::nccl::init_v1,     sp::nccl::start_v1,
    sp::nccl::plugin_stop_event, sp::nccl::record_v1, sp::nccl::plugin_finalize,
};
}
