// One adapter for every NCCL profiler plugin API version: it turns a version's event descriptor
// into the version-independent EventDesc of profiler_plugin_core.h and builds the ncclProfiler_vN
// table. What differs between versions is found from the descriptor's own fields at compile time
// (requires-expressions), so no version lists it again:
//   - func / datatype: ncclFunc_t / ncclDataType_t numbers in v1, names from v2 (overloads);
//   - the communicator hash: on each Coll/P2p event in v1-v3, given to init from v4;
//   - nChannels on Coll/P2p, and the %globaltimer stamps of KernelCh events (the channel's start
//     in the descriptor, its stop in the KernelChStop state args): v4 and later. v3 declares
//     KernelCh without timers; it is not requested there (plugin_init's mask) and reads as empty;
//   - the API events' graphCaptured flag (CollApi / P2pApi): v5 and later;
//   - copy-engine collectives (CeColl): v6.
// Each nccl_profiler_vN.cpp adds only its init (the signature is the version's) and defines the
// exported table with make_profiler.
#pragma once

#include <cstdint>

#include "nccl_op_names.h"
#include "plugin/abi/nccl_profiler_common.h"
#include "plugin/core/profiler_plugin_core.h"

namespace sp::nccl {

inline sp_coll_type coll_type_of(uint8_t func_id) { return coll_type_by_func_id(func_id); }
inline sp_coll_type coll_type_of(const char* func) { return coll_type_by_name(func); }
inline uint32_t element_size_of(uint8_t datatype) { return datatype_size(datatype); }
inline uint32_t element_size_of(const char* datatype) { return datatype_size_by_name(datatype); }

// The fields Coll and P2p descriptors share.
template <typename OpDescr>
void read_operation(const OpDescr& op, EventDesc& d) {
  d.coll = coll_type_of(op.func);
  d.count = op.count;
  d.datatype_size = element_size_of(op.datatype);
  if constexpr (requires { op.commHash; }) d.comm_hash = op.commHash;
  if constexpr (requires { op.nChannels; }) d.channels = op.nChannels;
}

template <typename Descr>
void read_kernel_channel([[maybe_unused]] const Descr& e, [[maybe_unused]] EventDesc& d) {
  if constexpr (requires { e.kernelCh.pTimer; }) {
    d.channel = e.kernelCh.channelId;
    d.gpu_timer = e.kernelCh.pTimer;
    d.has_gpu_timer = true;
  }
}

// v6: a collective the copy engines run. Its fields are a Coll's; no channels report for it.
template <typename Descr>
void read_ce_collective([[maybe_unused]] const Descr& e, [[maybe_unused]] EventDesc& d) {
  if constexpr (requires { e.ceColl.ceSeqNum; }) {
    d.coll = coll_type_of(e.ceColl.func);
    d.count = e.ceColl.count;
    d.datatype_size = element_size_of(e.ceColl.datatype);
    d.root = e.ceColl.root;
  }
}

// v5+: the API-level events, read only for whether the call is captured into a CUDA graph.
template <typename Descr>
void read_api_call([[maybe_unused]] const Descr& e, [[maybe_unused]] EventDesc& d) {
  if constexpr (requires { e.collApi.graphCaptured; }) {
    d.graph_captured = e.type == kProfileCollApi ? e.collApi.graphCaptured != 0
                                                 : e.p2pApi.graphCaptured != 0;
  }
}

template <typename Descr, typename StateArgs>
struct ProfilerAdapter {
  static api::Result start_event(void* context, void** handle, Descr* e) {
    if (e == nullptr) {
      *handle = nullptr;
      return 0;
    }
    EventDesc d;
    d.type = e->type;
    d.parent = e->parentObj;
    d.rank = e->rank;
    if (e->type == kProfileColl) {
      read_operation(e->coll, d);
      d.root = e->coll.root;
    } else if (e->type == kProfileP2p) {
      read_operation(e->p2p, d);
      d.peer = e->p2p.peer;
    } else if (e->type == kProfileKernelCh) {
      read_kernel_channel(*e, d);
    } else if (e->type == kProfileCeColl) {
      read_ce_collective(*e, d);
    } else if (e->type == kProfileCollApi || e->type == kProfileP2pApi) {
      read_api_call(*e, d);
    }
    return plugin_start_event(context, handle, d);
  }

  static api::Result record_event_state(void* handle, int state,
                                        [[maybe_unused]] StateArgs* args) {
    if constexpr (requires { args->kernelCh.pTimer; }) {
      const bool timer = state == kStateKernelChStop && args != nullptr;
      return plugin_record_state(handle, state, timer ? args->kernelCh.pTimer : 0, timer);
    } else {
      return plugin_record_state(handle, state, 0, false);
    }
  }
};

// v1-v3: init knows nothing of the communicator; its first event tells.
template <int Version>
api::Result init_without_comm(void** context, int* mask) {
  PluginInit init;
  init.version = Version;
  return plugin_init(context, mask, init);
}

// v4+: the communicator's identity comes with init.
inline api::Result init_with_comm(int version, void** context, int* mask, const char* comm_name,
                                  uint64_t comm_hash, int nnodes, int nranks, int rank) {
  PluginInit init;
  init.version = version;
  init.comm_hash = comm_hash;
  init.comm_hash_known = true;
  init.comm_name = comm_name;
  init.nnodes = nnodes;
  init.nranks = nranks;
  init.rank = rank;
  return plugin_init(context, mask, init);
}

// The table NCCL finds as ncclProfiler_vN; constexpr, so the exported variable is constant-
// initialised (no static constructor).
template <typename Table>
constexpr Table make_profiler(typename Table::Init init) {
  using Adapter = ProfilerAdapter<typename Table::Descr, typename Table::StateArgs>;
  return Table{"straggler_probe",           init, &Adapter::start_event,
               &plugin_stop_event,          &Adapter::record_event_state,
               &plugin_finalize};
}

}  // namespace sp::nccl
