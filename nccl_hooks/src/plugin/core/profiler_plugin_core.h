// The NCCL profiler plugin, independent of the plugin API version: the version adapter
// (nccl_profiler_adapter.h, one instance per nccl_profiler_vN.cpp) translates NCCL's descriptors
// into EventDesc and calls in here.
//
// What it records: one event per collective / p2p operation with its communicator (group_id =
// commHash, the same on every member), rank, size, sequence number (comm_registry.h), bytes,
// peer, and its times: from ncclProfileKernelCh (API v4+), the GPU %globaltimer stamps the NCCL
// kernel writes at the start and stop of each channel, so the operation spans from the first
// channel's start to the last channel's stop; before v4, CPU times around NCCL's enqueue only.
//
// Event order: Coll/P2p start and stop fire on the user thread at enqueue; KernelCh start/stop
// fire later on the proxy thread, one per channel the operation uses (nChannels). An operation is
// complete when its Coll/P2p event stopped and all its channels stopped. Handles come from fixed
// pools taken and given back without a lock (plugin_handles.h; a late event can never touch freed
// memory, and a freed handle is reused last); when a pool is empty startEvent returns a null
// handle and NCCL skips that event (counted).
//
// Operations without channels: NCCL stops the Coll / P2p event right after handing the plan's
// proxy operations to its proxy thread, and KernelCh starts come later, from that thread, once
// the kernel stamped the channel's start; so the stop cannot wait to see whether channels come.
// What says none will is the descriptor: nChannels 0; a send or receive whose peer is the rank
// itself (NCCL gives a self send/recv a channel count but no proxy operation, so no KernelCh); a
// one-rank communicator (its collectives are copies without events, its p2p self). Those
// complete at their own stop with CPU times (ops_no_channel). Operations whose channels never
// start anyway are swept out with CPU times after 10 s (checked at most once a second, from the
// start and stop events); one with a channel in flight is running and is never swept.
//
// CUDA graphs: a collective captured into a graph starts and stops its Coll event once, at
// capture, and its KernelCh events come at every replay, naming that capture's handle. From v5 the
// plugin asks for the CollApi / P2pApi events only to learn which operations are captured
// (graphCaptured): those get a handle that is never reused while their communicator lives, and
// each replay (one set of channels) is emitted as an operation of its own, GPU-timed, numbered
// by replay in a sequence space derived from the communicator and the capture's sequence number,
// so every rank's replay k of the same captured collective matches. v4 cannot tell: a channel
// naming a freed handle is counted (stale_channels) and dropped.
//
// The files: profiler_plugin_core.cpp (the entry points), plugin_handles.* (pools and handles),
// plugin_operations.cpp (starting, completing and emitting operations).
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/abi/nccl_profiler_common.h"
#include "straggler_probe/probe.h"

namespace sp::nccl {

// A descriptor in version-independent form.
struct EventDesc {
  uint64_t type = 0;
  void* parent = nullptr;
  int rank = -1;
  // Coll / P2p
  sp_coll_type coll = SP_COLL_NONE;
  uint64_t count = 0;
  uint32_t datatype_size = 0;
  int root = -1;
  int peer = -1;
  uint32_t channels = 0;     // channels the operation runs on (v4+), 0 if unknown
  bool graph_captured = false;  // CollApi / P2pApi (v5+): the call is captured into a CUDA graph
  uint64_t comm_hash = 0;    // v1-v3 carry it per event; v4+ give it to init
  // KernelCh
  uint8_t channel = 0;
  uint64_t gpu_timer = 0;    // %globaltimer at channel start (v4+)
  bool has_gpu_timer = false;
};

// The plugin's counters: one list for the stats struct, the atomics, their read and reset.
//   ops_started: Coll / P2p / CeColl events given a handle; ops_emitted: operations emitted
//   (ops_completed + ops_swept); ops_completed: emitted when complete, at their last channel's
//   stop (GPU times) or at their own stop; ops_no_channel: of those, completed at their own stop
//   with CPU times because no channel reports for them (self send/recv, one-rank
//   communicators, nChannels 0, v6 copy-engine collectives, v1-v3); ops_swept: given up with
//   CPU times (channels never started within the sweep's bound, or the communicator ended);
//   pool_exhausted: a null handle was returned (NCCL skips that event); orphan_channels:
//   KernelCh without a live parent; ce_ops: v6 copy-engine collectives (CPU-timed)
//   graph_ops: operations captured into CUDA graphs (persistent handles); graph_replays: their
//   replays emitted; stale_channels: channels naming a handle already freed or an operation
//   already given up (v4 graph replays; a channel starting after its operation was swept)
// New counters go at the end (nccl_c_api.h copies them into a C struct).
#define SP_PLUGIN_COUNTERS(X) \
  X(contexts) X(ops_started) X(ops_emitted) X(ops_gpu_timed) X(ops_swept) X(pool_exhausted) \
  X(orphan_channels) X(ce_ops) X(graph_ops) X(graph_replays) X(stale_channels) \
  X(ops_completed) X(ops_no_channel)

struct PluginStats {
#define SP_DECLARE(name) uint64_t name = 0;
  SP_PLUGIN_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
};

struct PluginInit {
  int version = 6;
  uint64_t comm_hash = 0;
  bool comm_hash_known = false;  // v4+: from init; v1-v3: from the first event
  const char* comm_name = nullptr;
  int nnodes = 0;
  int nranks = 0;
  int rank = -1;
};

// All return ncclSuccess (0) except init on a hard failure; they never throw.
int plugin_init(void** context, int* activation_mask, const PluginInit& init);
int plugin_start_event(void* context, void** handle, const EventDesc& desc);
int plugin_stop_event(void* handle);
int plugin_record_state(void* handle, int state, uint64_t gpu_timer, bool has_gpu_timer);
int plugin_finalize(void* context);

PluginStats plugin_stats();
// Emits operations waiting on channels for longer than `older_than_ns` with CPU times (those
// NCCL stopped, with no channel in flight). start / stop events run it on their own, at most once
// per second, with a bound of 10 s.
void plugin_sweep(uint64_t older_than_ns);
// Tests: the timed sweep's bound and period, and the plugin's CPU clock (nullptr: the probe
// clock). plugin_reset_for_tests restores the defaults.
void plugin_set_sweep_for_tests(uint64_t older_than_ns, uint64_t period_ns, uint64_t (*clock)());
// Tests: back to no contexts, empty pools, zero counters.
void plugin_reset_for_tests();

}  // namespace sp::nccl
