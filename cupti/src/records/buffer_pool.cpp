#include "buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace sp::cupti {

BufferPool::BufferPool(size_t buffer_bytes, size_t max_buffers)
    : buffer_bytes_((buffer_bytes + 7) & ~size_t{7}),  // CUPTI records are 8-byte aligned
      max_buffers_(max_buffers) {
  all_.reserve(max_buffers_);
  free_.reserve(max_buffers_);
}

BufferPool::~BufferPool() {
  // Only buffers CUPTI no longer holds may be freed; the owner destroys the pool only after a
  // forced flush returned everything (or never, for the process-wide instance).
  for (uint8_t* b : free_) std::free(b);
}

uint8_t* BufferPool::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  uint8_t* out = nullptr;
  if (!free_.empty()) {
    out = free_.back();
    free_.pop_back();
  } else if (all_.size() < max_buffers_) {
    // calloc: zero pages straight from the kernel, no memset on this (possibly hot) thread.
    out = static_cast<uint8_t*>(std::calloc(buffer_bytes_, 1));
    if (out != nullptr) {
      all_.push_back(out);
      stats_.allocated = all_.size();
    }
  }
  if (out == nullptr) {
    ++stats_.exhausted;
    return nullptr;
  }
  ++stats_.in_flight;
  stats_.high_water = std::max(stats_.high_water, stats_.in_flight);
  return out;
}

bool BufferPool::release(uint8_t* buffer, size_t written) {
  if (!owns(buffer)) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.foreign_releases;
    return false;
  }
  // Zero outside the lock: the buffer is ours alone until it is back on the free list.
  std::memset(buffer, 0, std::min(written, buffer_bytes_));
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
  if (stats_.in_flight > 0) --stats_.in_flight;
  return true;
}

bool BufferPool::owns(const uint8_t* buffer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::find(all_.begin(), all_.end(), buffer) != all_.end();
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sp::cupti
