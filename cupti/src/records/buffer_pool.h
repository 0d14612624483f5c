// A bounded pool of pre-zeroed activity buffers for CUPTI.
//
// With CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER=1, CUPTI trusts that the buffers we hand it
// are zero and skips zeroing them itself, which it would otherwise do on the application thread
// (the header warns of stalls on the critical path). So buffers are zeroed here: fresh ones come
// from calloc, recycled ones are cleared on the flush thread (only the bytes CUPTI wrote) before
// they go back to the free list. The pool is bounded: when every buffer is in flight, acquire()
// returns nullptr and CUPTI drops (and counts) records instead of the probe growing without limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sp::cupti {

struct BufferPoolStats {
  uint64_t allocated = 0;   // buffers created so far (<= max_buffers)
  uint64_t in_flight = 0;   // handed to CUPTI or waiting to be parsed
  uint64_t high_water = 0;  // max in_flight seen
  uint64_t exhausted = 0;   // acquire() found no buffer
  uint64_t foreign_releases = 0;  // release() of a pointer we never handed out
};

class BufferPool {
 public:
  BufferPool(size_t buffer_bytes, size_t max_buffers);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A zeroed buffer of buffer_bytes(), or nullptr when the pool is exhausted or memory is short.
  // Called from CUPTI's buffer-request callback (any thread): short critical section, no CUPTI.
  uint8_t* acquire();

  // Returns a buffer after its records were consumed; zeroes the first `written` bytes. Returns
  // false for a pointer that is not ours (left untouched).
  bool release(uint8_t* buffer, size_t written);

  bool owns(const uint8_t* buffer) const;
  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_buffers() const { return max_buffers_; }
  BufferPoolStats stats() const;

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable std::mutex mutex_;
  std::vector<uint8_t*> all_;
  std::vector<uint8_t*> free_;
  BufferPoolStats stats_;
};

}  // namespace sp::cupti
