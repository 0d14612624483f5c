/* straggler_probe runtime: the C ABI of libstraggler_probe.so.
 *
 * These functions are the library's only exported symbols. Every entry point is safe to call
 * before sp_init, after sp_shutdown, or when the probe has stepped aside after a failure: it then
 * does nothing and returns SP_ERR_DISABLED (or 0 / an empty value). No function throws, blocks on
 * another rank or allocates on the recording path.
 *
 * Time: all timestamps are nanoseconds on the probe clock (sp_now_ns, CLOCK_REALTIME based, the
 * same base CUPTI uses by default), so CPU-timed events, CUDA-event and CUPTI times share one axis.
 */
#ifndef STRAGGLER_PROBE_PROBE_H_
#define STRAGGLER_PROBE_PROBE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_API __attribute__((visibility("default")))
#define SP_ABI_VERSION 1

typedef enum sp_status {
  SP_OK = 0,
  SP_ERR_DISABLED = 1,  /* not initialised, shut down, or stepped aside */
  SP_ERR_INVALID = 2,   /* bad argument (null pointer, unknown kind, bad config value) */
  SP_ERR_DROPPED = 3,   /* buffer full: the event was dropped and counted */
  SP_ERR_INTERNAL = 4,  /* unexpected failure; a warning was logged */
  SP_ERR_TIMEOUT = 5,   /* nothing arrived in time (sp_pop_summary) */
  SP_ERR_PAUSED = 6,    /* recording is paused (sp_set_recording_paused): nothing recorded */
} sp_status;

/* What an operation is. Values are stable: they go over the wire in step summaries. */
typedef enum sp_op_kind {
  SP_OP_FORWARD = 1,     /* forward compute of one micro-batch */
  SP_OP_BACKWARD = 2,    /* backward compute of one micro-batch */
  SP_OP_OPTIMIZER = 3,   /* optimizer step (incl. grad clipping) */
  SP_OP_COLLECTIVE = 4,  /* all-reduce, all-gather, reduce-scatter, broadcast, barrier... */
  SP_OP_SEND = 5,        /* point-to-point send (pipeline) */
  SP_OP_RECV = 6,        /* point-to-point recv (pipeline) */
  SP_OP_GC = 7,          /* Python garbage-collection pause */
  SP_OP_DATA_WAIT = 8,   /* waiting for the data loader */
  SP_OP_KERNEL = 9,      /* one GPU kernel (CUPTI) */
  SP_OP_MEMCPY = 10,     /* GPU memcpy / memset (CUPTI) */
  SP_OP_OTHER = 11,      /* user-named region */
  SP_OP_KIND_MAX = 12
} sp_op_kind;

/* Collective type, for SP_OP_COLLECTIVE / SEND / RECV. */
typedef enum sp_coll_type {
  SP_COLL_NONE = 0,
  SP_COLL_ALL_REDUCE = 1,
  SP_COLL_ALL_GATHER = 2,
  SP_COLL_REDUCE_SCATTER = 3,
  SP_COLL_BROADCAST = 4,
  SP_COLL_REDUCE = 5,
  SP_COLL_ALL_TO_ALL = 6,
  SP_COLL_BARRIER = 7,
  SP_COLL_SEND = 8,
  SP_COLL_RECV = 9,
  SP_COLL_GATHER = 10,
  SP_COLL_SCATTER = 11,
} sp_coll_type;

/* Where an event's times come from. */
typedef enum sp_time_source {
  SP_TIME_CPU = 0,         /* CPU clock around the call */
  SP_TIME_CUDA_EVENT = 1,  /* CUDA events on the stream, resolved later off the training thread */
  SP_TIME_CUPTI = 2,       /* CUPTI activity record */
  SP_TIME_NCCL = 3,        /* NCCL profiler plugin */
  /* The name SP_TIME_CPU had until 0.x: "host" now means the machine only. Kept for one release
     so that callers of the C ABI still compile; the value is the same. */
  SP_TIME_HOST = SP_TIME_CPU,
} sp_time_source;

/* One complete operation. Plain data, fixed size; copied into a per-thread ring. */
typedef struct sp_event {
  uint64_t start_ns;     /* probe clock */
  uint64_t end_ns;       /* probe clock; end >= start */
  uint64_t group_id;     /* communicator / process-group identity (hash), 0 if none */
  uint64_t seq;          /* collective sequence number within group_id, per rank */
  uint64_t bytes;        /* payload size, 0 if unknown */
  uint32_t kind;         /* sp_op_kind */
  uint32_t coll;         /* sp_coll_type */
  int32_t microbatch;    /* -1 if none */
  int32_t peer;          /* global rank of the p2p peer, -1 if none */
  int32_t group_size;    /* participants in group_id, 0 if unknown */
  uint32_t stream;       /* stream id (CUDA stream or logical stream), 0 = default */
  uint32_t name_id;      /* interned name (sp_intern), 0 if none */
  uint32_t time_source;  /* sp_time_source */
  /* Which step the event belongs to. 0 (the default): the step whose marks enclose start_ns.
   * Otherwise the label passed to sp_mark_step, plus one: producers whose events run past the
   * mark (GPU work launched in step N that executes after mark N) or arrive late (CUPTI buffers)
   * pin them to the step that launched them. Tagging needs labels >= 0 that increase from mark to
   * mark. (The first draft of ABI 1 called this field `reserved` and asked for 0: same offset,
   * same size, same meaning of 0, so callers built against it are binary compatible.) */
  uint64_t step_plus_one;
} sp_event;

typedef struct sp_config {
  uint32_t struct_size;       /* sizeof(sp_config), for ABI evolution */
  int32_t rank;               /* -1: read from RANK */
  int32_t world_size;         /* -1: read from WORLD_SIZE */
  int32_t local_rank;         /* -1: read from LOCAL_RANK */
  uint32_t ring_capacity;     /* events per thread ring; 0: default (65536) */
  uint32_t max_threads;       /* recording threads; 0: default (64) */
  uint32_t flags;             /* reserved, 0 */
  /* Added after the first draft; honoured only when struct_size covers them. 0: environment or
   * default (see runtime/README.md). */
  uint32_t queue_steps;         /* finished summaries kept for the transport; default 16 */
  uint32_t step_grace_ms;       /* wait for late events after a mark before closing; default 50 */
  uint32_t drain_interval_ms;   /* consumer thread period; default 5 */
  uint32_t max_events_per_step; /* per-step event cap in the step cutter; default 262144 */
} sp_config;

typedef struct sp_stats {
  uint64_t events_recorded;
  uint64_t events_dropped;     /* ring full */
  uint64_t steps_completed;
  uint64_t steps_skipped;      /* summaries dropped because the consumer fell behind */
  uint64_t threads_registered;
  uint64_t threads_rejected;   /* threads beyond max_threads (their events are dropped) */
  /* Added after the first draft. events_recorded + events_dropped == calls that tried to record. */
  uint64_t events_discarded;   /* recorded, but in no summary: arrived after their step closed,
                                  over the per-step cap, or after the last mark at shutdown */
  uint64_t regions_unbalanced; /* regions never ended (an outer region ended first) */
  uint64_t annotations_dropped;
  uint64_t marks_dropped;      /* step marks lost because the consumer was stuck */
} sp_stats;

/* Every field of sp_stats, in order, as X(type, name): the one list that readers copy by (the
 * Python package's stats(), python/src/core_module.cpp). A field added to the struct is added
 * here, at the end, too (c_api.cpp checks that the list covers the struct). */
#define SP_STATS_FIELDS(X)                                                                  \
  X(uint64_t, events_recorded) X(uint64_t, events_dropped) X(uint64_t, steps_completed)     \
  X(uint64_t, steps_skipped) X(uint64_t, threads_registered) X(uint64_t, threads_rejected)  \
  X(uint64_t, events_discarded) X(uint64_t, regions_unbalanced)                             \
  X(uint64_t, annotations_dropped) X(uint64_t, marks_dropped)

SP_API uint32_t sp_abi_version(void);
SP_API void sp_config_init(sp_config* cfg); /* fills defaults */
SP_API int sp_init(const sp_config* cfg);   /* idempotent; SP_OK if already initialised */
SP_API int sp_shutdown(void);
SP_API int sp_is_enabled(void);

SP_API uint64_t sp_now_ns(void);
SP_API uint32_t sp_intern(const char* name); /* stable id for a region name; 0 on failure */

/* CPU-timed regions. begin returns a token for end (0 if disabled). Regions nest per thread. */
SP_API uint64_t sp_region_begin(uint32_t kind, int32_t microbatch, uint32_t name_id);
SP_API int sp_region_end(uint64_t token);

/* A complete event whose times are already known (CUDA events, CUPTI, NCCL, collectives). */
SP_API int sp_record(const sp_event* ev);

/* Step boundary: events recorded since the previous mark belong to `step`. Never waits: it
 * publishes (step, now) and the consumer thread cuts every thread's events at that time. */
SP_API int sp_mark_step(int64_t step);
/* Label of the last sp_mark_step, or -1 before the first. */
SP_API int64_t sp_last_marked_step(void);

/* Free-form annotation of the current step, e.g. ("seq_lens", "512,1024") for a micro-batch. */
SP_API int sp_annotate(int32_t microbatch, const char* key, const char* value);

/* Hand finished steps to the consumer (the transport thread) without waiting: every marked step
 * is closed at the consumer's next pass, without the grace period for late events. */
SP_API int sp_flush(void);

/* Where this rank sits in the job, stamped on every summary from now on (-1: unknown). */
SP_API int sp_set_topology(int32_t dp_rank, int32_t pp_stage);
/* Who this rank really is, when it was not known at sp_init (a launcher that sets LOCAL_RANK and
 * WORLD_SIZE but not RANK; the process group told later): stamped on every later summary and
 * re-stamped on the summaries still queued, so that none reaches the analysis under the rank
 * it was first given. SP_ERR_INVALID unless 0 <= rank < world_size. */
SP_API int sp_set_rank(int32_t rank, int32_t world_size);
/* Estimated offset of this rank's clock to rank 0's, stamped on every summary from now on. */
SP_API int sp_set_clock_offset(int64_t offset_ns);

/* The next finished step summary, encoded (step_summary.h, decode_summary). Waits up to
 * timeout_ms (0: no wait). SP_OK: *size bytes written to buf. SP_ERR_INVALID: buf too small,
 * *size says how much is needed, the summary stays queued. SP_ERR_TIMEOUT: none yet.
 * SP_ERR_DISABLED: none queued and the probe is off. Summaries queued before sp_shutdown can
 * still be popped after it. Call from the transport thread, never the training thread. */
SP_API int sp_pop_summary(void* buf, size_t capacity, size_t* size, int32_t timeout_ms);

/* Called on the consumer thread with every finished summary, encoded as sp_pop_summary returns
 * it, just before it is queued. The bytes are valid during the call only. It must return
 * quickly (the consumer drains the rings between steps) and must not call sp_shutdown. NULL
 * removes it. It may be set before sp_init and stays set across sp_shutdown / sp_init. */
typedef void (*sp_summary_callback)(const void* data, size_t size, void* user);
SP_API int sp_set_summary_callback(sp_summary_callback callback, void* user);

SP_API int sp_get_stats(sp_stats* out);

/* A rank's heartbeat: what it did last and when, for the transport's hang detection. The
 * consumer thread publishes it after each drain (nothing is added to the recording path), so it
 * shows the last event the rank *finished* (regions and collectives are recorded when they end)
 * and the last step mark. A rank whose ages keep growing is stuck; one whose heartbeat stops
 * coming (its process frozen) is silent. */
#define SP_HEARTBEAT_NAME_BYTES 48
typedef struct sp_heartbeat {
  uint32_t struct_size;      /* sizeof(sp_heartbeat) */
  uint32_t kind;             /* sp_op_kind of the last event; 0: none yet */
  uint32_t coll;             /* its sp_coll_type */
  int32_t microbatch;        /* its micro-batch, -1 if none */
  int64_t event_step;        /* the step it belongs to */
  uint64_t event_end_ns;     /* probe clock; 0: no event yet */
  int64_t last_marked_step;  /* label of the last sp_mark_step the consumer took; -1: none */
  uint64_t last_mark_ns;     /* its time; 0: none */
  uint64_t events_in_step;   /* events of the step in progress (compute, comm, waits): progress */
  uint64_t published_ns;     /* when the consumer last published (it is alive) */
  char name[SP_HEARTBEAT_NAME_BYTES]; /* the event's interned name, truncated; "" if none */
} sp_heartbeat;

/* Copies the latest heartbeat. SP_ERR_DISABLED before sp_init / in a forked child; SP_ERR_TIMEOUT
 * when none was published yet; SP_ERR_INVALID when out is null or out->struct_size is too small.
 * Never blocks. */
SP_API int sp_get_heartbeat(sp_heartbeat* out);

/* Pause and resume recording (rank 0's POST /control, relayed to every rank by the transport).
 * Reversible, unlike stepping aside: the change takes effect at the next sp_mark_step on the
 * training thread; from then until the mark after a resume, sp_record and sp_region_begin return
 * SP_ERR_PAUSED at once (one atomic load) and each step's summary carries no events, only the
 * annotation "straggler_probe.paused" (so that rank 0 skips it instead of waiting for it). */
typedef struct sp_pause_state {
  int32_t paused;          /* 1: the step in progress is not recorded */
  int32_t wanted;          /* 1: a pause is asked for (in effect from the next mark) */
  uint64_t pauses;         /* how many times recording paused */
  uint64_t steps_paused;   /* steps marked while paused */
} sp_pause_state;
SP_API int sp_set_recording_paused(int paused);
SP_API int sp_get_pause_state(sp_pause_state* out);

/* The last warning the probe logged (for tests and the Python layer); never NULL. */
SP_API const char* sp_last_warning(void);

#ifdef __cplusplus
}
#endif

#endif /* STRAGGLER_PROBE_PROBE_H_ */
