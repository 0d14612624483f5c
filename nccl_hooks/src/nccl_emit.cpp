#include "nccl_emit.h"

#include <array>
#include <mutex>

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

}  // namespace sp::nccl
