// The process-wide table of recording threads. A thread claims a slot the first time it records
// (an atomic claim, no lock) and gets a ThreadBuffer: its event ring and its stack of open
// regions, allocated then so that recording itself never allocates. When the thread exits its
// slot is orphaned; the consumer drains it and frees the slot for a later thread, buffer included.
//
// Lifetime: the table and every buffer live until the process exits (a buffer is reused, or kept
// aside when its capacity no longer fits). Nothing a recording thread touches is ever freed, so a
// thread still inside sp_record while the probe shuts down cannot crash.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "spsc_ring.h"
#include "straggler_probe/probe.h"

namespace sp::runtime {

inline constexpr uint32_t kMaxRegionDepth = 32;

struct RegionFrame {
  uint64_t start_ns;
  uint64_t serial;  // identifies the region in its token
  uint32_t kind;
  int32_t microbatch;
  uint32_t name_id;
};

struct ThreadBuffer {
  std::unique_ptr<SpscRing<sp_event>> ring;
  // Owner thread only.
  uint32_t depth = 0;
  uint64_t next_serial = 1;
  std::array<RegionFrame, kMaxRegionDepth> stack{};
};

enum class SlotState : uint32_t { kFree, kClaiming, kOwned, kOrphaned };

struct alignas(kCacheLine) ThreadSlot {
  std::atomic<SlotState> state{SlotState::kFree};
  uint32_t index = 0;
  // Set by the claiming thread while kClaiming; stable while kOwned / kOrphaned.
  std::atomic<ThreadBuffer*> buffer{nullptr};
  // Owner writes (rarely: only on anomalies), anyone reads.
  std::atomic<uint64_t> extra_dropped{0};  // region stack overflow
  std::atomic<uint64_t> regions_unbalanced{0};
  // Counts of buffers this slot set aside, so that per-slot totals stay monotonic.
  std::atomic<uint64_t> retired_pushed{0};
  std::atomic<uint64_t> retired_dropped{0};
  // Session baselines (written by sp_init while nothing records).
  std::atomic<uint64_t> base_pushed{0};
  std::atomic<uint64_t> base_dropped{0};
  std::atomic<uint64_t> base_unbalanced{0};

  // Monotonic totals over every buffer this slot has had.
  uint64_t pushed_total() const;
  uint64_t dropped_total() const;
};

class ThreadRegistry {
 public:
  explicit ThreadRegistry(uint32_t table_size);

  enum class ClaimError { kNone, kFull, kNoMemory };
  // Claims a slot for the calling thread unless `limit` threads own one already, with a buffer
  // whose ring holds `ring_capacity` events. nullptr and *error when the limit is reached, no
  // slot is free, or memory is short.
  ThreadSlot* claim(uint32_t limit, uint32_t ring_capacity, ClaimError* error);
  // The owning thread is exiting: the consumer drains the slot, then recycles it.
  void release(ThreadSlot* slot);
  // Consumer only, after draining an orphaned slot.
  void recycle(ThreadSlot* slot);

  uint32_t table_size() const { return static_cast<uint32_t>(slots_.size()); }
  // One past the highest slot index ever claimed: the consumer scans no further.
  uint32_t high_water() const { return high_water_.load(std::memory_order_acquire); }
  ThreadSlot& slot(uint32_t i) { return slots_[i]; }
  const ThreadSlot& slot(uint32_t i) const { return slots_[i]; }

 private:
  std::vector<ThreadSlot> slots_;
  std::atomic<uint32_t> high_water_{0};
  std::atomic<uint32_t> owned_{0};  // slots of live threads (kClaiming or kOwned)
  std::mutex retired_mutex_;
  std::vector<std::unique_ptr<ThreadBuffer>> retired_;  // never freed: see the file comment
};

}  // namespace sp::runtime
