// GPU timing of interposed NCCL operations with CUDA events on the operation's stream.
//
// Hot path (training thread): one cudaEventRecord before and one after the NCCL call, events from
// a pool, the pair queued; nothing waits. A poller thread turns completed pairs into events on the
// probe clock: the start is placed relative to an *anchor* event that the poller records on its
// own idle stream and synchronises on (GPU time ≈ host time of that moment, to within half the
// synchronisation round trip), re-anchored every few seconds so that cudaEventElapsedTime's float
// milliseconds stay at microsecond precision; the duration is elapsed(start, end).
//
// CUDA events measure the stream-ordered window: the start event fires when the stream reaches
// it, so queueing behind earlier work on that stream is included. Streams being captured into a
// CUDA graph are never timed (recording would be captured too; replays bypass the NCCL API).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "interposer/cuda_runtime_api.h"
#include "straggler_probe/probe.h"

namespace sp::nccl {

struct StreamTimerOptions {
  size_t max_in_flight = 4096;     // timed operations not yet completed on the GPU
  size_t max_events = 16384;       // CUDA events ever created
  uint32_t poll_ms = 5;            // 0: no poller thread (tests call poll())
  uint32_t reanchor_ms = 5000;
};

struct StreamTimerStats {
  uint64_t timed = 0;              // emitted with GPU times
  uint64_t untimed_full = 0;       // in-flight limit reached: host times instead
  uint64_t record_failures = 0;
  uint64_t anchors = 0;
  uint64_t anchor_uncertainty_ns = 0;
};

class StreamTimer {
 public:
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
  // Records the start event; nullptr when timing is not possible (caller uses host times).
  Pending* begin(void* stream);
  // Records the end event and queues the operation; `ev` carries everything but the times.
  // `host_start`/`host_end` are used if the GPU times cannot be had after all.
  void end(Pending* p, void* stream, const sp_event& ev);
  // Drops a begun operation (the NCCL call failed).
  void cancel(Pending* p);

  // Emits every queued operation whose end event completed; returns how many.
  size_t poll();
  StreamTimerStats stats() const;

 private:
  void* take_event();
  void give_event(void* e);
  bool anchor_locked();
  void thread_main();

  CudaRt rt_;
  StreamTimerOptions opts_;
  int device_ = 0;
  void* anchor_stream_ = nullptr;
  void* anchor_events_[3] = {nullptr, nullptr, nullptr};
  void* anchor_event_ = nullptr;  // the tightest of anchor_events_
  uint64_t anchor_host_ns_ = 0;
  uint64_t last_anchor_ns_ = 0;

  mutable std::mutex mutex_;  // pool and queue; never held across a CUDA call that can block
  std::vector<void*> free_events_;
  size_t events_created_ = 0;
  std::vector<Pending*> free_pending_;
  std::vector<Pending*> queued_;
  std::vector<Pending*> all_pending_;
  StreamTimerStats stats_;

  std::mutex poll_mutex_;  // one poller at a time
  std::thread thread_;
  std::mutex cv_mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> started_{false};
};

}  // namespace sp::nccl
