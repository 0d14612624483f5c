#include "heartbeat_cell.h"

#include <algorithm>
#include <cstring>

#include "capture/name_table.h"

namespace sp::runtime {
namespace {

constexpr uint64_t kRepublishNs = 1'000'000'000ull;

// Kinds that show where the training thread is in its step. GPU kernels and copies arrive in
// CUPTI's buffers long after they ran, under mangled names: they would hide the training thread's last op.
bool shows_progress(uint32_t kind) {
  return kind != SP_OP_KERNEL && kind != SP_OP_MEMCPY && kind != SP_OP_GC;
}

}  // namespace

void HeartbeatCell::publish(const sp_heartbeat& hb) noexcept {
  const uint64_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
  // Each field's store is a release (no fence): it keeps the odd sequence number before it, and
  // ThreadSanitizer, which does not model fences, checks it (on x86 both are plain stores).
  kind_coll_.store((static_cast<uint64_t>(hb.kind) << 32) | hb.coll, std::memory_order_release);
  microbatch_.store(static_cast<uint32_t>(hb.microbatch), std::memory_order_release);
  event_step_.store(static_cast<uint64_t>(hb.event_step), std::memory_order_release);
  event_end_.store(hb.event_end_ns, std::memory_order_release);
  marked_.store(static_cast<uint64_t>(hb.last_marked_step), std::memory_order_release);
  mark_ns_.store(hb.last_mark_ns, std::memory_order_release);
  events_in_step_.store(hb.events_in_step, std::memory_order_release);
  published_.store(hb.published_ns, std::memory_order_release);
  for (int i = 0; i < kNameWords; ++i) {
    uint64_t w = 0;
    std::memcpy(&w, hb.name + 8 * i, 8);
    name_[i].store(w, std::memory_order_release);
  }
  seq_.store(s + 2, std::memory_order_release);
}

bool HeartbeatCell::read(sp_heartbeat* out) const noexcept {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint64_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 == 0) return false;
    if (s1 & 1u) continue;
    const uint64_t kc = kind_coll_.load(std::memory_order_acquire);
    out->kind = static_cast<uint32_t>(kc >> 32);
    out->coll = static_cast<uint32_t>(kc);
    out->microbatch = static_cast<int32_t>(static_cast<uint32_t>(microbatch_.load(std::memory_order_acquire)));
    out->event_step = static_cast<int64_t>(event_step_.load(std::memory_order_acquire));
    out->event_end_ns = event_end_.load(std::memory_order_acquire);
    out->last_marked_step = static_cast<int64_t>(marked_.load(std::memory_order_acquire));
    out->last_mark_ns = mark_ns_.load(std::memory_order_acquire);
    out->events_in_step = events_in_step_.load(std::memory_order_acquire);
    out->published_ns = published_.load(std::memory_order_acquire);
    for (int i = 0; i < kNameWords; ++i) {
      const uint64_t w = name_[i].load(std::memory_order_acquire);
      std::memcpy(out->name + 8 * i, &w, 8);
    }
    out->name[SP_HEARTBEAT_NAME_BYTES - 1] = '\0';
    // The fields were acquire loads: the check below cannot move before them.
    if (seq_.load(std::memory_order_relaxed) == s1) return true;
  }
  return false;
}

HeartbeatTracker::HeartbeatTracker() {
  hb_.last_marked_step = -1;
  hb_.microbatch = -1;
  hb_.event_step = -1;
}

void HeartbeatTracker::mark(const StepMark& mark) noexcept {
  if (mark.t_ns < hb_.last_mark_ns) return;  // marks come in order; a stale one changes nothing
  hb_.last_marked_step = mark.step;
  hb_.last_mark_ns = mark.t_ns;
  hb_.events_in_step = 0;  // a new step is in progress
  changed_ = true;
}

void HeartbeatTracker::event(const sp_event& ev) noexcept {
  if (!shows_progress(ev.kind)) return;
  const bool this_step = ev.step_plus_one != 0
                             ? static_cast<int64_t>(ev.step_plus_one) - 1 > hb_.last_marked_step
                             : ev.start_ns > hb_.last_mark_ns;
  if (this_step) ++hb_.events_in_step;
  changed_ = true;
  if (ev.end_ns < hb_.event_end_ns) return;  // late records (CUDA events, other threads) are older
  hb_.kind = ev.kind;
  hb_.coll = ev.coll;
  hb_.microbatch = ev.microbatch;
  hb_.event_end_ns = ev.end_ns;
  hb_.event_step = ev.step_plus_one != 0 ? static_cast<int64_t>(ev.step_plus_one) - 1
                   : this_step           ? hb_.last_marked_step + 1
                                         : hb_.last_marked_step;
  name_id_ = ev.name_id;
}

void HeartbeatTracker::publish(HeartbeatCell& cell, const NameTable& names, uint64_t now_ns) {
  if (!changed_ && now_ns - last_publish_ns_ < kRepublishNs) return;
  if (name_id_ != published_name_id_) {
    name_ = names.name(name_id_);
    published_name_id_ = name_id_;
  }
  std::memset(hb_.name, 0, sizeof hb_.name);
  std::memcpy(hb_.name, name_.data(), std::min(name_.size(), sizeof hb_.name - 1));
  hb_.published_ns = now_ns;
  cell.publish(hb_);
  changed_ = false;
  last_publish_ns_ = now_ns;
}

}  // namespace sp::runtime
