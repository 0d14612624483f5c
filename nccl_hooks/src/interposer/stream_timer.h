// GPU timing of interposed NCCL operations with CUDA events on the operation's stream.
//
// Hot path (training thread), without a lock: a timing slot from a lock-free free list (its two
// CUDA events are created once, at the slot's first use), one cudaEventRecord before and one after
// the NCCL call; the slot then goes to the poller through a lock-free queue. Nothing waits. The
// poller thread turns completed slots into events on the probe clock: the start is placed relative
// to an *anchor* event that the poller records on its own idle stream and synchronises on (GPU
// time ≈ CPU time of that moment, to within half the synchronisation round trip), re-anchored
// every few seconds so that cudaEventElapsedTime's float milliseconds stay at microsecond
// precision; the duration is elapsed(start, end).
//
// CUDA events measure the stream-ordered window: the start event fires when the stream reaches
// it, so queueing behind earlier work on that stream is included. Streams being captured into a
// CUDA graph are never timed (recording would be captured too; replays bypass the NCCL API), and
// while any thread captures a graph (graph_capture.h) the poller queries nothing: in the global
// capture mode another thread's query invalidates the capture. The poller also puts its own thread
// in the relaxed capture mode where the runtime has cudaThreadExchangeStreamCaptureMode.
//
// The poller works on the device that was current when the timer started (the rank's), and sets it
// on its own thread before any query, so elapsed times never cross devices.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "index_free_list.h"
#include "interposer/cuda_runtime_api.h"
#include "straggler_probe/mpsc_queue.h"
#include "straggler_probe/probe.h"

namespace sp::nccl {

// Whether NCCL operations may be timed with CUDA events on their streams; nullptr when they may,
// else the reason, for one line in the log. Not with STRAGGLER_PROBE_NCCL_TIMING=cpu, and never
// with CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron's setting): with one hardware queue, a
// timing-enabled event recorded on a communication stream serialises it with the compute streams
// and breaks the overlap of NCCL with GEMMs (pytorch/pytorch#143890,
// NVIDIA/TransformerEngine#1353). Those times come from the NCCL profiler plugin and CUPTI's NCCL
// kernel records instead.
const char* why_no_stream_timing(const char* timing_env, const char* max_connections_env);

struct StreamTimerOptions {
  size_t max_in_flight = 4096;     // timed operations not yet completed on the GPU (<= 8192)
  uint32_t poll_ms = 5;            // 0: no poller thread (tests call poll())
  uint32_t reanchor_ms = 5000;
};

// Read and reset by field list (one list for the struct and its atomic counters).
//   untimed_full: in-flight limit reached, CPU times instead; capture_pauses: polls skipped
//   because a CUDA graph capture was under way
#define SP_STREAM_TIMER_COUNTERS(X) \
  X(timed) X(untimed_full) X(record_failures) X(anchors) X(capture_pauses)

struct StreamTimerStats {
#define SP_DECLARE(name) uint64_t name = 0;
  SP_STREAM_TIMER_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  uint64_t anchor_uncertainty_ns = 0;
};

class StreamTimer {
 public:
  static constexpr size_t kMaxSlots = 8192;

  StreamTimer(const CudaRt& rt, StreamTimerOptions opts);
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  // Prepares the anchor on the calling thread's current device and starts the poller.
  bool start();
  void stop();

  // True when `stream` is being captured into a CUDA graph (do not time, do not record).
  bool capturing(void* stream) const;

  struct Pending;
  // Records the start event; nullptr when timing is not possible (caller uses CPU times).
  Pending* begin(void* stream);
  // Records the end event on the calling thread, right after the NCCL call (stream order).
  // False when it could not: the slot is released and the caller keeps CPU times.
  bool record_end(Pending* p, void* stream);
  // Hands a slot whose end was recorded to the poller with the event it completes (`ev` carries
  // everything but the GPU times; its CPU times stand if the GPU's cannot be had). Any thread.
  void submit(Pending* p, const sp_event& ev);
  // record_end then submit; on failure `ev` is emitted with its CPU times.
  void end(Pending* p, void* stream, const sp_event& ev);
  // Drops a begun operation (the NCCL call failed).
  void cancel(Pending* p);

  // Emits every queued operation whose end event completed; returns how many. Nothing while a
  // CUDA graph capture is under way.
  size_t poll();
  StreamTimerStats stats() const;

 private:
  bool anchor_locked();  // poll_mutex_ held (or before the poller starts)
  bool prepare_slot(uint32_t slot);
  void emit_completed(uint32_t slot, int query);
  void thread_main();

  CudaRt rt_;
  StreamTimerOptions opts_;
  int device_ = 0;
  void* anchor_stream_ = nullptr;
  void* anchor_events_[3] = {nullptr, nullptr, nullptr};
  void* anchor_event_ = nullptr;  // the tightest of anchor_events_
  uint64_t anchor_host_ns_ = 0;
  uint64_t last_anchor_ns_ = 0;

  std::unique_ptr<Pending[]> slots_;
  IndexFreeList free_;
  // Slots whose end was recorded, on their way to the poller; then the poller's own list.
  // Twice the slots: the consumer's position is never more than one lap of slots behind a
  // producer, so a push always finds its cell published (never a transient "full").
  std::unique_ptr<runtime::BoundedMpscQueue<uint32_t, 2 * kMaxSlots>> submitted_;
  std::vector<uint32_t> in_flight_;  // poll_mutex_

  struct Counters {
#define SP_DECLARE(name) std::atomic<uint64_t> name{0};
    SP_STREAM_TIMER_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
    std::atomic<uint64_t> anchor_uncertainty_ns{0};
  } counters_;

  std::mutex poll_mutex_;  // one poller at a time (the thread, or a test); never the hot path
  std::thread thread_;
  std::mutex cv_mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> started_{false};
};

}  // namespace sp::nccl
