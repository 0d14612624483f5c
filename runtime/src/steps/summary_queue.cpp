#include "summary_queue.h"

#include <cstring>
#include <utility>

namespace sp::runtime {

void SummaryQueue::reset(size_t capacity) {
  std::lock_guard lock(mutex_);
  items_.clear();
  capacity_ = capacity == 0 ? 1 : capacity;
  open_ = true;
  skipped_ = 0;
}

void SummaryQueue::close() {
  {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  ready_.notify_all();
}

bool SummaryQueue::push(QueuedSummary item, size_t extra_room) {
  bool kept_all = true;
  {
    std::lock_guard lock(mutex_);
    while (items_.size() >= capacity_ + extra_room) {
      items_.pop_front();
      ++skipped_;
      kept_all = false;
    }
    items_.push_back(std::move(item));
  }
  ready_.notify_one();
  return kept_all;
}

SummaryQueue::PopStatus SummaryQueue::wait_front(std::unique_lock<std::mutex>& lock,
                                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (items_.empty()) {
    if (!open_) return PopStatus::kClosed;
    if (ready_.wait_until(lock, deadline) == std::cv_status::timeout && items_.empty()) {
      return open_ ? PopStatus::kTimeout : PopStatus::kClosed;
    }
  }
  return PopStatus::kOk;
}

SummaryQueue::PopStatus SummaryQueue::pop(StepSummary* out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const PopStatus status = wait_front(lock, timeout);
  if (status != PopStatus::kOk) return status;
  *out = std::move(items_.front().summary);
  items_.pop_front();
  return PopStatus::kOk;
}

SummaryQueue::PopStatus SummaryQueue::pop_encoded(void* buf, size_t capacity, size_t* size,
                                                  std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const PopStatus status = wait_front(lock, timeout);
  if (status != PopStatus::kOk) return status;
  const std::string& bytes = items_.front().encoded;
  *size = bytes.size();
  if (bytes.size() > capacity || buf == nullptr) return PopStatus::kTooSmall;
  std::memcpy(buf, bytes.data(), bytes.size());
  items_.pop_front();
  return PopStatus::kOk;
}

void SummaryQueue::update_all(const std::function<void(QueuedSummary&)>& fn) {
  std::lock_guard lock(mutex_);
  for (QueuedSummary& item : items_) fn(item);
}

uint64_t SummaryQueue::skipped() const {
  std::lock_guard lock(mutex_);
  return skipped_;
}

size_t SummaryQueue::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

}  // namespace sp::runtime
