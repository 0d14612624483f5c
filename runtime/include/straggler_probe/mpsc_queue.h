// Bounded lock-free queue for records from any thread: many producers, one consumer. Dmitry
// Vyukov's bounded MPMC design, fixed capacity: a push never waits, a full queue rejects. Used
// where a mutex could block the training thread behind the consumer (the runtime's step marks,
// nccl_hooks' finished operations and CUDA-event timings).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sp::runtime {

template <class T, size_t N>
class BoundedMpscQueue {
  static_assert(N >= 2 && (N & (N - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  BoundedMpscQueue() noexcept { clear_unsafe(); }

  // Only while no thread pushes or pops (initialisation).
  void clear_unsafe() noexcept {
    for (size_t i = 0; i < N; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
    enqueue_pos_.store(0, std::memory_order_relaxed);
    dequeue_pos_.store(0, std::memory_order_relaxed);
  }

  bool try_push(const T& value) noexcept {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & (N - 1)];
      const size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Whether a pop would find a value now (single consumer; a push racing with it may not show).
  bool ready() const noexcept {
    const size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    const size_t seq = cells_[pos & (N - 1)].sequence.load(std::memory_order_acquire);
    return static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1) >= 0;
  }

  // Single consumer.
  bool try_pop(T* out) noexcept {
    const size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell& cell = cells_[pos & (N - 1)];
    const size_t seq = cell.sequence.load(std::memory_order_acquire);
    if (static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1) < 0) return false;  // empty
    *out = cell.value;
    cell.sequence.store(pos + N, std::memory_order_release);
    dequeue_pos_.store(pos + 1, std::memory_order_relaxed);
    return true;
  }

 private:
  struct Cell {
    std::atomic<size_t> sequence;
    T value;
  };
  alignas(64) std::array<Cell, N> cells_{};
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace sp::runtime
