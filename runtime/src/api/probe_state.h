// The probe's process-wide state. Created by the first successful sp_init (never at load time)
// and never destroyed: recording threads, the consumer and the transport may touch it at any
// moment, including during exit, so it simply outlives them all.
//
// What the hot path reads is here (the active session number, the thread table); what a session
// owns beyond that (the consumer thread and its step cutter) is in Consumer, created by
// sp_init and stopped by sp_shutdown.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/env_config.h"
#include "steps/heartbeat_cell.h"
#include "straggler_probe/mpsc_queue.h"
#include "capture/name_table.h"
#include "steps/step_cutter.h"
#include "steps/summary_queue.h"
#include "capture/thread_registry.h"

namespace sp::runtime {

class Consumer;

inline constexpr size_t kMarkQueueCapacity = 1024;
inline constexpr size_t kMaxPendingAnnotations = 65536;
inline constexpr size_t kMaxAnnotationKey = 256;
inline constexpr size_t kMaxAnnotationValue = 64 * 1024;

struct PendingAnnotation {
  uint64_t t_ns;
  Annotation annotation;
};

struct Probe {
  Probe();
  ~Probe() = delete;  // see the file comment

  // --- read on the hot path -------------------------------------------------------------------
  // The running session's number; 0 while not recording (before init, after shutdown, after a
  // failure, in a forked child). Recording threads compare it with the session they bound to.
  std::atomic<uint64_t> active_session{0};
  std::atomic<uint32_t> ring_capacity{65536};
  std::atomic<uint32_t> max_threads{64};
  ThreadRegistry registry{kMaxThreadsLimit};
  BoundedMpscQueue<StepMark, kMarkQueueCapacity> marks;
  pthread_key_t thread_exit_key{};  // its destructor orphans an exiting thread's slot

  // --- counters of the current session (reset by sp_init) ------------------------------------
  std::atomic<uint64_t> rejected_thread_drops{0};  // events of threads beyond max_threads
  std::atomic<uint64_t> threads_rejected{0};
  std::atomic<uint64_t> marks_dropped{0};
  std::atomic<uint64_t> annotations_dropped{0};   // inbox full or bad step
  std::atomic<uint64_t> steps_completed{0};
  std::atomic<uint64_t> events_discarded{0};       // published by the consumer
  std::atomic<uint64_t> cutter_annotations_dropped{0};
  std::atomic<int64_t> last_marked_step{-1};
  // Pause (sp_set_recording_paused): asked for from any thread, applied by sp_mark_step on the
  // training thread, so that a step is either wholly recorded or wholly paused.
  std::atomic<bool> pause_wanted{false};
  std::atomic<bool> recording_paused{false};
  std::atomic<uint64_t> pauses{0};
  std::atomic<uint64_t> steps_paused{0};

  // --- stamped on summaries --------------------------------------------------------------------
  std::atomic<int32_t> rank{0};        // sp_init's, until sp_set_rank says otherwise
  std::atomic<int32_t> world_size{1};
  std::atomic<int32_t> dp_rank{-1};
  std::atomic<int32_t> pp_stage{-1};
  std::atomic<int64_t> clock_offset_ns{0};

  // --- off the hot path -------------------------------------------------------------------------
  NameTable names;
  // Written by the consumer after each pass, read by the transport (sp_get_heartbeat).
  HeartbeatCell heartbeat;
  SummaryQueue summaries;

  std::mutex annotation_mutex;
  std::vector<PendingAnnotation> annotation_inbox;

  // Wakes the consumer early (flush, shutdown) without the caller ever waiting on it.
  std::mutex wake_mutex;
  std::condition_variable wake_cv;
  std::atomic<uint64_t> flush_requests{0};

  // Guarded by the lifecycle mutex (lifecycle.cpp).
  RuntimeConfig config;
  uint64_t sessions_started = 0;
  std::unique_ptr<Consumer> consumer;
  std::atomic<bool> failed{false};  // an internal error made the probe step aside for good

  void wake_consumer();
};

// nullptr until the first successful sp_init.
Probe* probe_instance() noexcept;
// True in the child of a fork() made after sp_init: the probe stays off there for good.
bool in_forked_child() noexcept;

// Something failed: log one warning naming `where` and `what`, stop recording for good, and let
// the consumer wind down on its own. Never waits; callable from any thread.
void step_aside(const char* where, const char* what) noexcept;

// The summary callback (sp_set_summary_callback). Kept apart from Probe so that it can be set
// before sp_init.
struct SummaryCallbackSlot {
  sp_summary_callback fn = nullptr;
  void* user = nullptr;
};
void store_summary_callback(SummaryCallbackSlot callback);
SummaryCallbackSlot load_summary_callback();

}  // namespace sp::runtime
