// Single-producer single-consumer ring of trivially copyable records: the recording thread pushes,
// the consumer thread drains. Fixed capacity (a power of two), storage allocated and touched up
// front so that a push never allocates or page-faults. A full ring rejects the record and counts
// it: the recording thread must never wait for the consumer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace sp::runtime {

inline constexpr size_t kCacheLine = 64;

template <class T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring records are copied with memcpy semantics");

 public:
  // nullptr when the storage cannot be allocated (the caller steps aside).
  static std::unique_ptr<SpscRing> create(uint32_t capacity_pow2) noexcept {
    if (capacity_pow2 == 0 || (capacity_pow2 & (capacity_pow2 - 1)) != 0) return nullptr;
    std::unique_ptr<SpscRing> ring(new (std::nothrow) SpscRing());
    if (!ring) return nullptr;
    ring->slots_.reset(new (std::nothrow) T[capacity_pow2]);
    if (!ring->slots_) return nullptr;
    // Touch every page now: first-touch page faults would otherwise land on the hot path.
    std::memset(static_cast<void*>(ring->slots_.get()), 0, sizeof(T) * capacity_pow2);
    ring->mask_ = capacity_pow2 - 1;
    return ring;
  }

  uint32_t capacity() const noexcept { return static_cast<uint32_t>(mask_ + 1); }

  // Producer only.
  bool try_push(const T& record) noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ > mask_) {
      // Looks full with the stale tail; refresh it once (the only shared read on this path).
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ > mask_) {
        // Single writer: a plain read-modify-write is enough, the atomic is for the readers.
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
    }
    slots_[head & mask_] = record;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer only. Calls sink(const T&) for every record published so far, oldest first.
  template <class Sink>
  size_t drain(Sink&& sink) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) sink(slots_[i & mask_]);
    tail_.store(head, std::memory_order_release);
    return static_cast<size_t>(head - tail);
  }

  // Consumer only: forget everything published so far (stale records of an earlier session).
  size_t discard_all() noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    tail_.store(head, std::memory_order_release);
    return static_cast<size_t>(head - tail);
  }

  // Monotonic counters, readable from any thread.
  uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  SpscRing() = default;

  // Producer-written line and consumer-written line kept apart to avoid false sharing.
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  std::atomic<uint64_t> dropped_{0};
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
  alignas(kCacheLine) std::unique_ptr<T[]> slots_;
  uint64_t mask_ = 0;
};

}  // namespace sp::runtime
