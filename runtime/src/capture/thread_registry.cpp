#include "thread_registry.h"

#include <new>

namespace sp::runtime {

uint64_t ThreadSlot::pushed_total() const {
  const ThreadBuffer* b = buffer.load(std::memory_order_acquire);
  return retired_pushed.load(std::memory_order_relaxed) + (b != nullptr ? b->ring->pushed() : 0);
}

uint64_t ThreadSlot::dropped_total() const {
  const ThreadBuffer* b = buffer.load(std::memory_order_acquire);
  return retired_dropped.load(std::memory_order_relaxed) +
         extra_dropped.load(std::memory_order_relaxed) + (b != nullptr ? b->ring->dropped() : 0);
}

ThreadRegistry::ThreadRegistry(uint32_t table_size) : slots_(table_size) {
  for (uint32_t i = 0; i < table_size; ++i) slots_[i].index = i;
}

ThreadSlot* ThreadRegistry::claim(uint32_t limit, uint32_t ring_capacity, ClaimError* error) {
  *error = ClaimError::kNone;
  // Reserve a place under the limit first, so that concurrent claims cannot overshoot it.
  if (owned_.fetch_add(1, std::memory_order_acq_rel) >= limit) {
    owned_.fetch_sub(1, std::memory_order_acq_rel);
    *error = ClaimError::kFull;
    return nullptr;
  }
  for (uint32_t i = 0; i < table_size(); ++i) {
    ThreadSlot& s = slots_[i];
    SlotState expected = SlotState::kFree;
    if (s.state.load(std::memory_order_relaxed) != SlotState::kFree ||
        !s.state.compare_exchange_strong(expected, SlotState::kClaiming,
                                         std::memory_order_acquire)) {
      continue;
    }
    // While kClaiming nobody else looks at the slot, so its buffer may be replaced here.
    ThreadBuffer* b = s.buffer.load(std::memory_order_relaxed);
    if (b == nullptr || b->ring->capacity() != ring_capacity) {
      std::unique_ptr<ThreadBuffer> fresh(new (std::nothrow) ThreadBuffer());
      if (fresh) fresh->ring = SpscRing<sp_event>::create(ring_capacity);
      if (!fresh || !fresh->ring) {
        s.state.store(SlotState::kFree, std::memory_order_release);
        owned_.fetch_sub(1, std::memory_order_acq_rel);
        *error = ClaimError::kNoMemory;
        return nullptr;
      }
      if (b != nullptr) {
        // Readers of the stats may still hold the old pointer: set it aside, never free it.
        s.retired_pushed.fetch_add(b->ring->pushed(), std::memory_order_relaxed);
        s.retired_dropped.fetch_add(b->ring->dropped(), std::memory_order_relaxed);
        std::lock_guard lock(retired_mutex_);
        retired_.emplace_back(b);
      }
      b = fresh.release();
      s.buffer.store(b, std::memory_order_release);
    }
    b->depth = 0;
    s.state.store(SlotState::kOwned, std::memory_order_release);
    uint32_t hw = high_water_.load(std::memory_order_relaxed);
    while (hw < i + 1 &&
           !high_water_.compare_exchange_weak(hw, i + 1, std::memory_order_release)) {
    }
    return &s;
  }
  // Every slot is owned or still waiting for the consumer to drain it (a burst of exits).
  owned_.fetch_sub(1, std::memory_order_acq_rel);
  *error = ClaimError::kFull;
  return nullptr;
}

void ThreadRegistry::release(ThreadSlot* slot) {
  // The thread no longer counts against the limit, although its slot is reusable only once the
  // consumer has drained it: thread churn must not look like too many threads.
  slot->state.store(SlotState::kOrphaned, std::memory_order_release);
  owned_.fetch_sub(1, std::memory_order_acq_rel);
}

void ThreadRegistry::recycle(ThreadSlot* slot) {
  slot->state.store(SlotState::kFree, std::memory_order_release);
}

}  // namespace sp::runtime
