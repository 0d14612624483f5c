/* C entry points of the NCCL layer, exported by libstraggler_probe.so: counters and the last
 * recorded operations, for diagnostics, the Python package and the GPU checks (tests/gpu). */
#ifndef STRAGGLER_PROBE_GPU_NCCL_C_API_H_
#define STRAGGLER_PROBE_GPU_NCCL_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "straggler_probe/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_nccl_stats {
  uint32_t struct_size;         /* sizeof(sp_nccl_stats) */
  uint32_t plugin_active;       /* the NCCL profiler plugin records (the interposer steps aside) */
  uint64_t recorded;            /* interposer: operations recorded (a folded group counts once) */
  uint64_t folded_groups;
  uint64_t passthrough;         /* interposer: calls forwarded without recording */
  uint64_t failed_calls;
  uint64_t graph_captured;      /* skipped: stream capturing into a CUDA graph */
  uint64_t in_progress;         /* non-blocking communicator: CPU-timed */
  uint64_t steps_marked;        /* step boundaries found from the operation sequence */
  uint64_t cuda_event_timed;    /* interposer operations timed with CUDA events */
  uint64_t cuda_event_fallbacks;/* timing not possible: CPU times */
  uint64_t plugin_contexts;
  uint64_t plugin_ops;          /* plugin: operations emitted */
  uint64_t plugin_ops_gpu_timed;/* plugin: with KernelCh GPU times */
  uint64_t plugin_ops_swept;    /* plugin: given up, CPU-timed: no channel started in 10 s */
  /* Added with profiler API v6. */
  uint64_t plugin_ce_ops;       /* plugin: copy-engine collectives (v6), CPU-timed */
  /* Added with CUDA-graph support. */
  uint64_t plugin_graph_ops;    /* plugin: operations captured into CUDA graphs (v5+) */
  uint64_t plugin_graph_replays;/* plugin: their replays, emitted with GPU times */
  uint64_t plugin_stale_channels;/* plugin: channels naming a freed handle (dropped; v4 replays) */
  /* Added with channel-less operations and the timed sweep. plugin_ops = completed + swept. */
  uint64_t plugin_ops_started;  /* plugin: Coll / P2p / CeColl events given a handle */
  uint64_t plugin_ops_completed;/* plugin: emitted when complete (last channel stop, or own stop) */
  uint64_t plugin_ops_no_channel;/* plugin: of those, completed at their own stop, CPU-timed:
                                   no channel reports for them (self send/recv, one rank, ...) */
} sp_nccl_stats;

/* The fields of sp_nccl_stats after plugin_active, in order, with where they come from: the one
 * list the C entry point copies by (nccl_c_api.cpp). X(field, source, counter): source is
 * `interposer` (InterposerStats) or `plugin` (PluginStats). Add new fields at the end. */
#define SP_NCCL_STATS_FIELDS(X)                                                                \
  X(recorded, interposer, recorded) X(folded_groups, interposer, folded_groups)                \
  X(passthrough, interposer, passthrough) X(failed_calls, interposer, failed_calls)            \
  X(graph_captured, interposer, graph_captured) X(in_progress, interposer, in_progress)        \
  X(steps_marked, interposer, steps_marked) X(cuda_event_timed, interposer, cuda_event_timed)  \
  X(cuda_event_fallbacks, interposer, cuda_event_fallbacks)                                    \
  X(plugin_contexts, plugin, contexts) X(plugin_ops, plugin, ops_emitted)                      \
  X(plugin_ops_gpu_timed, plugin, ops_gpu_timed) X(plugin_ops_swept, plugin, ops_swept)       \
  X(plugin_ce_ops, plugin, ce_ops) X(plugin_graph_ops, plugin, graph_ops)                      \
  X(plugin_graph_replays, plugin, graph_replays) X(plugin_stale_channels, plugin, stale_channels) \
  X(plugin_ops_started, plugin, ops_started) X(plugin_ops_completed, plugin, ops_completed)    \
  X(plugin_ops_no_channel, plugin, ops_no_channel)

SP_API int sp_nccl_get_stats(sp_nccl_stats* out);
/* The last (up to 64) NCCL operations recorded, oldest first; returns how many exist. */
SP_API size_t sp_nccl_recent_ops(sp_event* out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* STRAGGLER_PROBE_GPU_NCCL_C_API_H_ */
