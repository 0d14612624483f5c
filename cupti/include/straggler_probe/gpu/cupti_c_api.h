/* C entry points of the GPU-capture layer, exported by libstraggler_probe.so.
 *
 * For the Python package (ctypes/pybind11) and for tools: start CUPTI capture, hand CUPTI over to
 * torch.profiler and take it back, ask for a flush at a step end, read statistics. All calls are
 * safe before start, after a failure and in a forked child (they then do nothing).
 */
#ifndef STRAGGLER_PROBE_GPU_CUPTI_C_API_H_
#define STRAGGLER_PROBE_GPU_CUPTI_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "straggler_probe/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_cupti_stats {
  uint32_t struct_size;     /* sizeof(sp_cupti_stats) */
  int32_t active;           /* capturing now */
  int32_t paused;
  int32_t cupti_major;
  uint64_t windows;
  uint64_t kernels;
  uint64_t memcpys;
  uint64_t tagged_activities;
  uint64_t untagged_activities;
  uint64_t nccl_kernels;
  uint64_t dropped_records;  /* CUPTI's count of records lost (no buffer) */
  uint64_t buffers_refused;
  uint64_t events_emitted;
  double clock_skew_ppm;     /* CUPTI clock vs probe clock */
  int64_t clock_offset_ns;
  uint64_t clock_uncertainty_ns;
  uint32_t time_base_changes;
  uint32_t pauses;
  int32_t time_base;          /* 0 unknown, 1 CUPTI ns, 2 ticks (a TSC timestamp callback) */
  int32_t attribution;        /* 0 launch markers, 1 external correlation, 2 off */
  double ns_per_unit;         /* ns per CUPTI time unit (the clock fit's slope) */
  uint64_t markers_issued;    /* region / NCCL launch markers launched */
  uint64_t marker_failures;   /* driver calls of the markers that failed (attribution stops) */
  uint64_t markers_lost;      /* marker records whose entry was overwritten before read */
  uint64_t undecided_released; /* activities decided without a later marker seen */
  uint64_t markers_seen;      /* marker records found in CUPTI's buffers */
  uint64_t marker_stream_cupti;  /* the marker stream as CUPTI's records name it */
  uint64_t marker_stream_driver; /* ... and as cuStreamGetId does (diagnosis) */
  uint64_t zero_correlation_activities; /* activities with no correlation id: unattributable */
} sp_cupti_stats;

/* Every field of sp_cupti_stats after struct_size, in order, as X(type, name): the one list the
 * C entry point copies by (cupti_c_api.cpp) and the Python package reads by (core_module.cpp).
 * A field added to the struct is added here, at the end, and nowhere else. */
#define SP_CUPTI_STATS_FIELDS(X)                                                          \
  X(int32_t, active) X(int32_t, paused) X(int32_t, cupti_major) X(uint64_t, windows)       \
  X(uint64_t, kernels) X(uint64_t, memcpys) X(uint64_t, tagged_activities)                \
  X(uint64_t, untagged_activities) X(uint64_t, nccl_kernels) X(uint64_t, dropped_records) \
  X(uint64_t, buffers_refused) X(uint64_t, events_emitted) X(double, clock_skew_ppm)      \
  X(int64_t, clock_offset_ns) X(uint64_t, clock_uncertainty_ns)                           \
  X(uint32_t, time_base_changes) X(uint32_t, pauses) X(int32_t, time_base)                \
  X(int32_t, attribution) X(double, ns_per_unit) X(uint64_t, markers_issued)                \
  X(uint64_t, marker_failures) X(uint64_t, markers_lost) X(uint64_t, undecided_released)  \
  X(uint64_t, markers_seen) X(uint64_t, marker_stream_cupti) X(uint64_t, marker_stream_driver) \
  X(uint64_t, zero_correlation_activities)

/* Starts CUPTI capture (idempotent). SP_OK when capturing, SP_ERR_DISABLED when unavailable
 * (one warning was printed). */
SP_API int sp_cupti_start(void);
/* Stops capture for good (flushes what is there; never calls cuptiFinalize). */
SP_API int sp_cupti_stop(void);
/* Hands CUPTI to another client (torch.profiler): flush, disable our kinds. */
SP_API int sp_cupti_pause(const char* reason);
/* Takes it back: re-registers callbacks, re-enables kinds, recalibrates the clock. */
SP_API int sp_cupti_resume(void);
/* Step end: asks the flush thread to process now; never blocks. */
SP_API int sp_cupti_request_flush(void);
/* Region attribution (external correlation), per thread, nesting. push returns 1 when it pushed,
 * 0 when capture is off or paused (then it costs two loads); sp_region_begin / sp_region_end call
 * these themselves. A pop without a push of this thread does nothing. */
SP_API int sp_cupti_region_push(uint32_t kind, int32_t microbatch, uint32_t name_id);
SP_API void sp_cupti_region_pop(void);
SP_API int sp_cupti_get_stats(sp_cupti_stats* out);
/* A CUDA graph capture begins (begin = 1) or ends (0) in this process (graph_capture.h): the
 * probe's background threads query no CUDA event meanwhile, since in the global capture mode a
 * query from another thread invalidates the capture. Nesting is counted. */
SP_API int sp_gpu_graph_capture(int begin);
/* Top kernels per region type as text (first line: "GPU capture active: ..." or "GPU capture
 * inactive: <reason>"); returns the full length (like snprintf). */
SP_API size_t sp_cupti_report(char* buf, size_t len, uint32_t top_k);

#ifdef __cplusplus
}
#endif

#endif /* STRAGGLER_PROBE_GPU_CUPTI_C_API_H_ */
