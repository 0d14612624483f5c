#include "queued_summary_source.h"

#include <chrono>

namespace sp::rank_pipeline {

void QueuedSummarySource::push(EncodedSummary summary) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(summary));
  }
  cv_.notify_one();
}

void QueuedSummarySource::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

size_t QueuedSummarySource::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

SummarySource::Status QueuedSummarySource::pop(int timeout_ms, EncodedSummary* out, std::string*) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout_ms > 0 && queue_.empty() && !closed_) {
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return !queue_.empty() || closed_; });
  }
  if (queue_.empty()) return closed_ ? Status::kClosed : Status::kEmpty;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return Status::kOk;
}

}  // namespace sp::rank_pipeline
