#include "loop_thread.h"

#include <pthread.h>

namespace sp::rank_pipeline {

LoopThread::~LoopThread() {
  if (thread_.joinable()) thread_.detach();  // join_for decided; never block in a destructor
}

void LoopThread::start(const char* name, std::function<void()> body) {
  thread_ = std::thread([this, name, body = std::move(body)] {
    pthread_setname_np(pthread_self(), name);  // a failure only leaves the inherited name
    body();
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    cv_.notify_all();
  });
}

bool LoopThread::join_for(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [this] { return finished_; })) {
    lock.unlock();
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

bool LoopThread::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

}  // namespace sp::rank_pipeline
