// A background thread that can be asked to stop and joined with a timeout: std::thread has no
// timed join, and a thread stuck in a store call or a stalled analysis must not hang the exit of
// the training job. A thread that does not finish in time is detached and its owner leaks what
// it uses (see the callers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sp::rank_pipeline {

class LoopThread {
 public:
  LoopThread() = default;
  ~LoopThread();
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  // `name` (at most 15 characters: the kernel's limit) is what top -H, perf and gdb show for the
  // thread: a user who sees a busy thread in their training process can tell it is the probe's.
  void start(const char* name, std::function<void()> body);
  bool join_for(std::chrono::milliseconds timeout);  // false: still running, now detached
  bool finished() const;

 private:
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool finished_ = false;
};

}  // namespace sp::rank_pipeline
