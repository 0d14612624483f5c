// Launch markers: the hot-path half of region attribution (launch_brackets.h is the other half).
//
// CUPTI gives every launch (kernel, memcpy, memset, graph launch) a correlation id taken from one
// process-wide counter when the API call is entered, and writes it into the activity record even
// when no API records are enabled. So a region is bracketed in launch order by two markers of our
// own: a 4-byte cuMemsetD32Async on a probe-owned non-blocking stream, whose record carries its
// correlation id. A kernel launched between a region's two markers, from any thread onto any
// stream (autograd's device threads, NCCL's streams), has a correlation id between theirs.
//
// Why not external correlation: CUPTI writes EXTERNAL_CORRELATION records only for launches that
// also write an API record, and API records cost microseconds per launch on the launching thread
// (measured on an H200: +20% of a launch-bound step). A marker costs one asynchronous driver call
// per region boundary, and nothing per kernel.
//
// The marker's value says which marker it is: 0xA5 in the top byte (torch's memsets are byte
// values, cudaMemsetAsync, so no 4-byte memset of the job carries it), the marker's sequence
// number in the low 24 bits. The sequence number indexes a ring of what each marker stood for;
// the ring is written before the marker is launched and read by the flush thread, lock-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "loader/cuda_driver.h"

namespace sp::cupti {

struct LaunchMarkerStats {
  uint64_t issued = 0;       // markers launched
  uint64_t failed = 0;       // a driver call failed (the markers then stop: one warning)
  uint64_t no_context = 0;   // no CUDA context current on the thread: nothing to bracket
  uint64_t lost = 0;         // records whose ring entry was overwritten before it was read
  uint64_t stream_id = 0;    // cuStreamGetId of the first context's marker stream
};

class LaunchMarkers {
 public:
  static constexpr uint32_t kValueTag = 0xA5000000u;
  static constexpr uint32_t kValueTagMask = 0xFF000000u;
  static constexpr uint32_t kSeqMask = 0x00FFFFFFu;
  static constexpr uint32_t kRingSize = 1u << 16;  // markers in flight before the flush reads them
  static constexpr uint64_t kNoMarker = 0;

  struct Marker {
    uint64_t seq = 0;          // this marker's sequence number
    uint64_t external_id = 0;  // the region / NCCL id (external_ids.h)
    uint64_t begin_seq = 0;    // for an end marker, its begin's sequence number; else its own
    bool is_begin = false;
  };

  explicit LaunchMarkers(const CudaDriverApi& driver) : driver_(driver) {}
  LaunchMarkers(const LaunchMarkers&) = delete;
  LaunchMarkers& operator=(const LaunchMarkers&) = delete;

  bool usable() const {
    return driver_.complete() && !failed_.load(std::memory_order_relaxed);
  }

  // Hot path (any thread). issue_begin returns the marker's sequence number (never kNoMarker)
  // or kNoMarker when none was launched; issue_end brackets the region begun by `begin_seq`.
  uint64_t issue_begin(uint64_t external_id);
  bool issue_end(uint64_t external_id, uint64_t begin_seq);

  // Flush thread: what a 4-byte memset record of `value` stands for. False for a memset that is
  // not a marker; a marker whose ring entry was overwritten is counted lost.
  static bool is_marker_value(uint32_t value, uint64_t bytes) {
    return bytes == 4 && (value & kValueTagMask) == kValueTag;
  }
  bool lookup(uint32_t value, Marker* out);

  LaunchMarkerStats stats() const;
  std::string last_error() const;

 private:
  struct Entry {
    std::atomic<uint64_t> seq{0};  // written last (release): the entry is whole when it matches
    std::atomic<uint64_t> external_id{0};
    std::atomic<uint64_t> begin_seq{0};
  };
  struct ContextSlot {
    std::atomic<CuContext> context{nullptr};
    CuDevicePtr target = 0;
    CuStream stream = nullptr;
  };
  static constexpr int kMaxContexts = 16;

  uint64_t issue(uint64_t external_id, uint64_t begin_seq, bool is_begin);
  const ContextSlot* slot_for(CuContext ctx);
  void fail(const char* what, CuResult r);

  CudaDriverApi driver_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> next_seq_{1};
  Entry ring_[kRingSize];
  ContextSlot slots_[kMaxContexts];
  std::mutex slots_mutex_;  // creating a context's stream and target: once per context
  std::atomic<uint64_t> issued_{0}, failed_calls_{0}, no_context_{0}, lost_{0};
  std::atomic<uint64_t> stream_id_{0};
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

}  // namespace sp::cupti
