// A fixed set of slot numbers 0..n-1 that any thread takes and gives back without a lock, first
// freed, first reused: a bounded MPMC ring (Dmitry Vyukov's design, the one runtime's
// BoundedMpscQueue uses, with a compare-and-swap on the taking side too). First in, first out
// keeps a freed slot unused for as long as possible, which matters to the profiler plugin: NCCL
// may still name a freed operation handle in a late event. Hands out the slots of fixed pools
// (the plugin's handles, the stream timer's timing slots) on the NCCL hot path. No lock; the one
// wait is for another thread's unpublished take or give, two stores away.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace sp::nccl {

class IndexFreeList {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit IndexFreeList(uint32_t n) : size_(n), mask_(capacity_for(n) - 1),
                                       cells_(new Cell[mask_ + 1]) {
    reset();
  }

  // Every slot free again, lowest first. Only while no thread takes or gives.
  void reset() {
    for (size_t i = 0; i <= mask_; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
    enqueue_.store(0, std::memory_order_relaxed);
    dequeue_.store(0, std::memory_order_relaxed);
    for (uint32_t i = 0; i < size_; ++i) give(i);
  }

  // The longest-free slot, or kNone when all are taken.
  uint32_t take() {
    size_t pos = dequeue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          const uint32_t slot = cell.slot;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return slot;
        }
      } else if (diff < 0) {
        // Empty, unless a give has claimed this cell and not yet published it: then wait for
        // it (two stores away) rather than report a free slot as missing.
        if (enqueue_.load(std::memory_order_acquire) == pos) return kNone;
        std::this_thread::yield();
        pos = dequeue_.load(std::memory_order_relaxed);
      } else {
        pos = dequeue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Returns a slot taken before (each at most once: the ring holds exactly the free ones).
  void give(uint32_t slot) {
    if (slot >= size_) return;
    size_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.slot = slot;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return;
        }
      } else if (diff < 0) {
        // The ring holds at most every slot, so this cell is only still marked taken because the
        // take that emptied it a lap ago has not published yet: wait for it (two stores away);
        // giving up would lose the slot.
        std::this_thread::yield();
        pos = enqueue_.load(std::memory_order_relaxed);
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  uint32_t size() const { return size_; }

 private:
  struct Cell {
    std::atomic<size_t> sequence{0};
    uint32_t slot = 0;
  };
  static size_t capacity_for(uint32_t n) {
    size_t c = 2;
    while (c < n) c <<= 1;
    return c;
  }

  uint32_t size_;
  size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<size_t> enqueue_{0};
  alignas(64) std::atomic<size_t> dequeue_{0};
};

}  // namespace sp::nccl
