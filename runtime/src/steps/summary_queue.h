// Finished step summaries waiting for the transport thread. Bounded: when the transport (and so
// rank 0) falls behind, the oldest whole step is skipped and counted, so that what is sent stays
// fresh and memory stays flat. Only the consumer thread pushes; any thread may pop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "straggler_probe/step_summary.h"

namespace sp::runtime {

struct QueuedSummary {
  StepSummary summary;
  std::string encoded;  // encode_summary(summary), made once on the consumer thread
};

class SummaryQueue {
 public:
  enum class PopStatus { kOk, kTimeout, kClosed, kTooSmall };

  // Empties the queue, sets its capacity and opens it (a new session).
  void reset(size_t capacity);
  // Closed: pop no longer waits once the queue is empty (the probe is off).
  void close();

  // Returns false when the queue was full and its oldest summary was skipped to make room.
  // extra_room: how far beyond its capacity the queue may grow for this item, for the steps that
  // sp_flush / sp_shutdown close all at once (bounded by the step cutter's pending-step cap): a
  // job's last steps are not skipped because they came together.
  bool push(QueuedSummary item, size_t extra_room = 0);

  PopStatus pop(StepSummary* out, std::chrono::milliseconds timeout);
  // The encoded bytes of the next summary into buf; kTooSmall leaves it queued, *size = needed.
  PopStatus pop_encoded(void* buf, size_t capacity, size_t* size,
                        std::chrono::milliseconds timeout);

  // Calls fn on every queued item, oldest first, under the queue's lock (off the hot path: it
  // re-stamps the few queued summaries when a rank learns who it is).
  void update_all(const std::function<void(QueuedSummary&)>& fn);

  uint64_t skipped() const;
  size_t size() const;

 private:
  // Waits (lock held) for an item; returns kOk when the front is available.
  PopStatus wait_front(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout);

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<QueuedSummary> items_;
  size_t capacity_ = 16;
  bool open_ = false;
  uint64_t skipped_ = 0;
};

}  // namespace sp::runtime
