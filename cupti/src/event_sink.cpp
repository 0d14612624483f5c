#include "straggler_probe/gpu/event_sink.h"

#include <time.h>

#include <atomic>

// Weak references: resolved when the runtime core is linked into the same image (the preloadable
// library), null in test programs that link only the GPU layers.
extern "C" {
int sp_record(const sp_event* ev) __attribute__((weak));
uint32_t sp_intern(const char* name) __attribute__((weak));
uint64_t sp_now_ns(void) __attribute__((weak));
}

namespace sp::gpu {
namespace {

struct Sink {
  std::atomic<EventSinkFn> fn{nullptr};
  std::atomic<void*> user{nullptr};
  std::atomic<NameInternFn> intern{nullptr};
  std::atomic<void*> intern_user{nullptr};
};

Sink& sink() {
  static Sink s;  // trivially constructible atomics: constant-initialised, no constructor runs
  return s;
}

}  // namespace

void set_event_sink(EventSinkFn fn, void* user) {
  sink().user.store(user, std::memory_order_relaxed);
  sink().fn.store(fn, std::memory_order_release);
}

void set_name_interner(NameInternFn fn, void* user) {
  sink().intern_user.store(user, std::memory_order_relaxed);
  sink().intern.store(fn, std::memory_order_release);
}

int emit_event(const sp_event& ev) {
  EventSinkFn fn = sink().fn.load(std::memory_order_acquire);
  if (fn != nullptr) return fn(&ev, sink().user.load(std::memory_order_relaxed));
  if (sp_record != nullptr) return sp_record(&ev);
  return SP_ERR_DISABLED;
}

uint32_t intern_name(const char* name) {
  NameInternFn fn = sink().intern.load(std::memory_order_acquire);
  if (fn != nullptr) return fn(name, sink().intern_user.load(std::memory_order_relaxed));
  if (sp_intern != nullptr) return sp_intern(name);
  return 0;
}

uint64_t probe_now_ns() {
  if (sp_now_ns != nullptr) return sp_now_ns();
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

sp_event blank_event() {
  sp_event ev{};
  ev.microbatch = -1;
  ev.peer = -1;
  return ev;
}

bool runtime_core_present() { return sp_record != nullptr; }

}  // namespace sp::gpu
