// A fixed set of slot numbers 0..n-1 that any thread takes and gives back without a lock: a
// Treiber stack whose head carries a tag, so a slot taken and returned between another thread's
// read and its swap (ABA) cannot corrupt it. Hands out slots of fixed pools (the profiler plugin's
// operation handles, the stream timer's timing slots) on the NCCL hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace sp::nccl {

class IndexFreeList {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit IndexFreeList(uint32_t n) : next_(new std::atomic<uint32_t>[n]), size_(n) { reset(); }

  // Every slot free again, lowest first. Only while no thread takes or gives.
  void reset() {
    for (uint32_t i = 0; i < size_; ++i) next_[i].store(i + 1 < size_ ? i + 2 : 0, std::memory_order_relaxed);
    head_.store(size_ > 0 ? 1 : 0, std::memory_order_release);
  }

  // A free slot, or kNone when all are taken.
  uint32_t take() {
    uint64_t head = head_.load(std::memory_order_acquire);
    for (;;) {
      const auto top = static_cast<uint32_t>(head);  // slot + 1, 0 = empty
      if (top == 0) return kNone;
      const uint64_t next = (head & ~0xffffffffull) + (1ull << 32) +
                            next_[top - 1].load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(head, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return top - 1;
      }
    }
  }

  void give(uint32_t slot) {
    if (slot >= size_) return;
    uint64_t head = head_.load(std::memory_order_relaxed);
    for (;;) {
      next_[slot].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
      const uint64_t mine = (head & ~0xffffffffull) + (1ull << 32) + slot + 1;
      if (head_.compare_exchange_weak(head, mine, std::memory_order_release,
                                      std::memory_order_relaxed)) {
        return;
      }
    }
  }

  uint32_t size() const { return size_; }

 private:
  std::unique_ptr<std::atomic<uint32_t>[]> next_;  // the slot under each slot, + 1 (0: none)
  uint32_t size_;
  std::atomic<uint64_t> head_{0};                  // (tag << 32) | (top slot + 1)
};

}  // namespace sp::nccl
