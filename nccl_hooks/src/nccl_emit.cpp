#include "nccl_emit.h"

#include <array>
#include <atomic>
#include <mutex>

#include "nccl_op_names.h"
#include "straggler_probe/gpu/event_sink.h"

namespace sp::nccl {
namespace {

constexpr size_t kRecent = 64;

struct Recent {
  std::mutex mutex;
  std::array<sp_event, kRecent> ring{};
  size_t next = 0;
  size_t count = 0;
};

Recent& recent() {
  static Recent* r = new Recent();  // leaked: used from proxy/poller threads until exit
  return *r;
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
  {
    Recent& r = recent();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.ring[r.next] = ev;
    r.next = (r.next + 1) % kRecent;
    if (r.count < kRecent) ++r.count;
  }
  return gpu::emit_event(ev);
}

size_t recent_nccl_events(sp_event* out, size_t capacity) {
  Recent& r = recent();
  std::lock_guard<std::mutex> lock(r.mutex);
  const size_t first = (r.next + kRecent - r.count) % kRecent;
  for (size_t i = 0; i < r.count && i < capacity && out != nullptr; ++i) {
    out[i] = r.ring[(first + i) % kRecent];
  }
  return r.count;
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
