#include "nccl_emit.h"

#include <array>
#include <atomic>

#include "nccl_op_names.h"
#include "straggler_probe/event_sink.h"

namespace sp::nccl {
namespace {

constexpr size_t kRecent = 64;

// The last kRecent operations, for diagnostics, without a lock: a writer claims the next slot
// and fills it while holding the slot's busy flag (never waiting: a slot busy with a reader or a
// writer 64 operations ahead is skipped, counted). A reader copies only slots it could claim.
struct RecentSlot {
  std::atomic<bool> busy{false};
  std::atomic<uint64_t> number{0};  // 1 + the operation's position in the ring, 0: empty
  sp_event ev{};
};
struct Recent {
  std::array<RecentSlot, kRecent> slots;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> skipped{0};
};

Recent& recent() {
  static Recent* r = new Recent();  // leaked: used from proxy/poller threads until exit
  return *r;
}

void remember(const sp_event& ev) {
  Recent& r = recent();
  const uint64_t n = r.next.fetch_add(1, std::memory_order_relaxed);
  RecentSlot& slot = r.slots[n % kRecent];
  if (slot.busy.exchange(true, std::memory_order_acquire)) {
    r.skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  slot.ev = ev;
  slot.number.store(n + 1, std::memory_order_relaxed);
  slot.busy.store(false, std::memory_order_release);
}

// Interned name ids by sp_coll_type, and of a mixed group (0: not interned yet).
constinit std::atomic<uint32_t> g_names[16] = {};
constinit std::atomic<uint32_t> g_group_name{0};
constinit std::atomic<uint32_t> g_one_sided_names[3] = {};  // put, signal, wait

uint32_t interned(std::atomic<uint32_t>& slot, const char* name) {
  uint32_t id = slot.load(std::memory_order_relaxed);
  if (id == 0) {
    id = gpu::intern_name(name);
    slot.store(id, std::memory_order_relaxed);
  }
  return id;
}

}  // namespace

int emit_nccl_event(const sp_event& ev) {
  remember(ev);
  return gpu::emit_event(ev);
}

size_t recent_nccl_events(sp_event* out, size_t capacity) {
  Recent& r = recent();
  const uint64_t end = r.next.load(std::memory_order_acquire);
  const uint64_t first = end > kRecent ? end - kRecent : 0;
  size_t copied = 0;
  for (uint64_t n = first; n < end; ++n) {
    RecentSlot& slot = r.slots[n % kRecent];
    if (slot.busy.exchange(true, std::memory_order_acquire)) continue;  // being written
    const bool current = slot.number.load(std::memory_order_relaxed) == n + 1;
    if (current && out != nullptr && copied < capacity) out[copied] = slot.ev;
    slot.busy.store(false, std::memory_order_release);
    if (current) ++copied;
  }
  return copied;
}

uint32_t nccl_event_name(sp_coll_type coll, bool mixed_group) {
  if (mixed_group) return interned(g_group_name, "ncclGroup");
  return interned(g_names[static_cast<size_t>(coll) & 15u], api_name(coll));
}

uint32_t nccl_one_sided_name(sp_coll_type coll, uint64_t bytes) {
  if (coll == SP_COLL_RECV) return interned(g_one_sided_names[2], "ncclWaitSignal");
  return bytes > 0 ? interned(g_one_sided_names[0], "ncclPutSignal")
                   : interned(g_one_sided_names[1], "ncclSignal");
}

void forget_nccl_event_names_for_tests() {
  for (auto& n : g_names) n.store(0);
  for (auto& n : g_one_sided_names) n.store(0);
  g_group_name.store(0);
}

}  // namespace sp::nccl
