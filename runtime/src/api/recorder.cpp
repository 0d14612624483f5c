#include "recorder.h"

#include <pthread.h>

#include <fmt/format.h>

#include <atomic>
#include <string>

#include "capture/clock.h"
#include "straggler_probe/log.h"
#include "straggler_probe/thread_clock.h"
#include "probe_state.h"

namespace sp::runtime {
namespace {

// Trivially constructible and destructible, so access costs no guard or registration; the
// thread-exit work is done by the pthread key destructor instead (Probe::thread_exit_key).
struct ThreadBinding {
  uint64_t session;      // the session this binding is valid for
  ThreadSlot* slot;      // process-lifetime; kept across sessions
  ThreadBuffer* buffer;  // nullptr: this thread was turned away in `session`
};
thread_local ThreadBinding t_binding{0, nullptr, nullptr};

// Binds the calling thread to a slot for `session`. nullptr: rejected (counted) or failed.
ThreadBuffer* bind_slow(Probe& p, uint64_t session) noexcept {
  t_binding.session = session;
  t_binding.buffer = nullptr;
  ThreadSlot* slot = t_binding.slot;
  if (slot != nullptr) {
    // Bound in an earlier session: keep the slot and its ring; forget regions left open then.
    ThreadBuffer* b = slot->buffer.load(std::memory_order_acquire);
    b->depth = 0;
    t_binding.buffer = b;
    return b;
  }
  ThreadRegistry::ClaimError error{};
  slot = p.registry.claim(p.max_threads.load(std::memory_order_relaxed),
                          p.ring_capacity.load(std::memory_order_relaxed), &error);
  if (slot == nullptr) {
    if (error == ThreadRegistry::ClaimError::kNoMemory) {
      step_aside("thread registration", "cannot allocate the thread's event ring");
    } else {
      p.threads_rejected.fetch_add(1, std::memory_order_relaxed);
      log::warn_once("threads_rejected",
                     fmt::format("more than {} threads record events; the events of the others are "
                                 "dropped and counted (raise STRAGGLER_PROBE_MAX_THREADS)",
                                 p.max_threads.load(std::memory_order_relaxed)));
    }
    return nullptr;
  }
  pthread_setspecific(p.thread_exit_key, slot);
  t_binding.slot = slot;
  t_binding.buffer = slot->buffer.load(std::memory_order_acquire);
  return t_binding.buffer;
}

// The calling thread's buffer for the active session, or nullptr when not recording (*status
// says why).
// honour_pause false: end_region, which still closes (unrecorded) a region begun before a pause.
inline ThreadBuffer* current_buffer(int* status, bool honour_pause = true) noexcept {
  Probe* p = probe_instance();
  if (p == nullptr) {
    *status = SP_ERR_DISABLED;
    return nullptr;
  }
  const uint64_t session = p->active_session.load(std::memory_order_acquire);
  if (session == 0) {
    *status = SP_ERR_DISABLED;
    return nullptr;
  }
  if (honour_pause && p->recording_paused.load(std::memory_order_relaxed)) {  // a paused hook's one check
    *status = SP_ERR_PAUSED;
    return nullptr;
  }
  ThreadBuffer* b = t_binding.session == session ? t_binding.buffer : bind_slow(*p, session);
  if (b == nullptr) {
    p->rejected_thread_drops.fetch_add(1, std::memory_order_relaxed);
    *status = SP_ERR_DROPPED;
  }
  return b;
}

bool valid_kind(uint32_t kind) { return kind >= SP_OP_FORWARD && kind < SP_OP_KIND_MAX; }

}  // namespace

void on_thread_exit(void* slot) noexcept {
  // Runs on the exiting thread: unbind first, so that a late record from another thread-exit
  // hook claims a fresh slot instead of writing into one the consumer is about to recycle.
  t_binding = ThreadBinding{0, nullptr, nullptr};
  if (Probe* p = probe_instance()) p->registry.release(static_cast<ThreadSlot*>(slot));
}

int record_event(const sp_event& ev) noexcept {
  if (!valid_kind(ev.kind) || ev.end_ns < ev.start_ns) {
    if (probe_instance() == nullptr || in_forked_child()) return SP_ERR_DISABLED;
    static std::atomic<bool> warned{false};
    log::warn_once_fast(warned, "record_invalid", [&] {
      return fmt::format("sp_record: invalid event (kind {}, start {} end {}); such events are "
                         "rejected", ev.kind, ev.start_ns, ev.end_ns);
    });
    return SP_ERR_INVALID;
  }
  int status = SP_OK;
  ThreadBuffer* b = current_buffer(&status);
  if (b == nullptr) return status;
  return b->ring->try_push(ev) ? SP_OK : SP_ERR_DROPPED;
}

uint64_t begin_region(uint32_t kind, int32_t microbatch, uint32_t name_id) noexcept {
  int status = SP_OK;
  ThreadBuffer* b = current_buffer(&status);
  if (b == nullptr) return 0;
  if (!valid_kind(kind)) {
    static std::atomic<bool> warned{false};
    log::warn_once_fast(warned, "region_invalid_kind", [&] {
      return fmt::format("sp_region_begin: unknown kind {}; the region is not recorded", kind);
    });
    return 0;
  }
  ThreadSlot* slot = t_binding.slot;
  if (b->depth >= kMaxRegionDepth) {
    slot->extra_dropped.store(slot->extra_dropped.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
    return 0;
  }
  const uint64_t serial = b->next_serial++;
  b->stack[b->depth++] = RegionFrame{probe_now_ns(), serial, kind, microbatch, name_id};
  return (serial << kTokenSlotBits) | (slot->index + 1);
}

int end_region(uint64_t token) noexcept {
  const uint64_t end_ns = probe_now_ns();
  // Its begin was not recorded (and was counted then if it was a drop): nothing to do.
  if (token == 0) return SP_ERR_INVALID;
  int status = SP_OK;
  // Begun before a pause: closed and pushed; its end falls in a paused step, whose events the
  // consumer drops.
  ThreadBuffer* b = current_buffer(&status, /*honour_pause=*/false);
  if (b == nullptr) return status;
  ThreadSlot* slot = t_binding.slot;
  if ((token & ((1u << kTokenSlotBits) - 1)) != slot->index + 1) {
    static std::atomic<bool> warned{false};
    log::warn_once_fast(warned, "region_cross_thread", [] {
      return std::string(
          "sp_region_end called on another thread than its sp_region_begin; such regions are "
          "not recorded (use sp_record with both times for cross-thread spans)");
    });
    return SP_ERR_INVALID;
  }
  const uint64_t serial = token >> kTokenSlotBits;
  uint32_t i = b->depth;
  while (i > 0 && b->stack[i - 1].serial != serial) --i;
  if (i == 0) return SP_ERR_INVALID;  // already ended, or begun before this session
  const uint32_t index = i - 1;
  if (const uint32_t skipped = b->depth - 1 - index; skipped != 0) {
    // Inner regions were never ended (an exception unwound past them): close them unrecorded.
    slot->regions_unbalanced.store(
        slot->regions_unbalanced.load(std::memory_order_relaxed) + skipped,
        std::memory_order_relaxed);
  }
  b->depth = index;
  const RegionFrame& f = b->stack[index];
  sp_event ev{};
  ev.start_ns = f.start_ns;
  ev.end_ns = end_ns < f.start_ns ? f.start_ns : end_ns;
  ev.kind = f.kind;
  ev.coll = SP_COLL_NONE;
  ev.microbatch = f.microbatch;
  ev.peer = -1;
  ev.name_id = f.name_id;
  ev.time_source = SP_TIME_CPU;
  return b->ring->try_push(ev) ? SP_OK : SP_ERR_DROPPED;
}

int mark_step(int64_t step) noexcept {
  Probe* p = probe_instance();
  if (p == nullptr || p->active_session.load(std::memory_order_acquire) == 0) {
    return SP_ERR_DISABLED;
  }
  // The pause asked for (if any) starts or ends here: the step this mark closes keeps the state
  // it was recorded in.
  const bool was_paused = p->recording_paused.load(std::memory_order_relaxed);
  const bool wanted = p->pause_wanted.load(std::memory_order_relaxed);
  if (wanted != was_paused) {
    p->recording_paused.store(wanted, std::memory_order_relaxed);
    if (wanted) p->pauses.fetch_add(1, std::memory_order_relaxed);
  }
  if (was_paused) p->steps_paused.fetch_add(1, std::memory_order_relaxed);
  StepMark mark{step, probe_now_ns(), was_paused};
  // The training loop's CPU time, per step (a vDSO-less syscall, ~0.2 us, once a step): what
  // the rank computed, as against how long it took (a core shared with others, a device).
  mark.thread_cpu_ns = thread_cpu_ns();
  if (mark.thread_cpu_ns != 0) mark.thread_id = static_cast<uint64_t>(pthread_self());
  if (!p->marks.try_push(mark)) {
    // Only when the consumer has not run for ~1000 marks: this step merges into the next one.
    p->marks_dropped.fetch_add(1, std::memory_order_relaxed);
    static std::atomic<bool> warned{false};
    log::warn_once_fast(warned, "marks_dropped", [] {
      return std::string(
          "step marks are piling up (the consumer thread is not draining them); steps are "
          "merged and counted in marks_dropped");
    });
    return SP_ERR_DROPPED;
  }
  p->last_marked_step.store(step, std::memory_order_relaxed);
  return SP_OK;
}

}  // namespace sp::runtime
