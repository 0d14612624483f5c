// The consumer: one background thread per session. Every drain interval (or sooner when woken
// by sp_flush / sp_shutdown) it collects step marks, drains every thread's ring, feeds the step
// cutter (events into steps), and queues the steps that are complete as encoded summaries for
// the transport.
// The recording threads never wait for it; if it is slow, their rings fill and drop (counted).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/env_config.h"
#include "steps/heartbeat_cell.h"
#include "steps/step_cutter.h"

namespace sp::runtime {

struct Probe;

class Consumer {
 public:
  Consumer(Probe& probe, const RuntimeConfig& config, uint64_t origin_ns);
  ~Consumer();

  // Forgets what earlier sessions left in the rings, marks and annotation inbox. Call before
  // the session becomes active.
  void discard_stale();
  // Starts the thread; false and *error when it cannot.
  bool start(std::string* error);
  // Asks for a final pass (closing every marked step) and waits up to `timeout` for the thread
  // to finish. false: it did not (stuck in a callback); the caller must then leak this object.
  bool stop(std::chrono::milliseconds timeout);

 private:
  void run() noexcept;
  void pass(bool final_pass);
  // extra_room: see SummaryQueue::push (steps closed at once by a flush or the shutdown).
  void emit(StepSummary&& summary, size_t extra_room);

  Probe& probe_;
  RuntimeConfig config_;
  StepCutter cutter_;
  HeartbeatTracker heartbeat_;  // what the rank did last, published after each pass
  std::thread thread_;
  std::vector<uint64_t> drops_seen_;  // per slot: dropped_total at the last pass
  uint64_t rejected_seen_ = 0;
  uint64_t flushes_seen_ = 0;
  bool warned_ring_full_ = false;
  // Set when stop() gave up waiting: the thread must then exit without touching the rings again.
  std::atomic<bool> abandoned_{false};

  // Guarded by probe_.wake_mutex (the condition variable the thread sleeps on).
  bool stop_requested_ = false;
  bool finished_ = false;
  std::condition_variable finished_cv_;
};

// Stamps the probe's current rank and world size on every queued summary that carries others
// (sp_set_rank; and the consumer, when sp_set_rank ran while it was stamping one).
void restamp_queued_summaries(Probe& probe);

}  // namespace sp::runtime
