#include "straggler_probe/event_sink.h"

#include <time.h>

#include <atomic>

// Weak references: resolved when the runtime core is linked into the same image (the preloadable
// library), null in test programs that link only the GPU layers.
extern "C" {
int sp_record(const sp_event* ev) __attribute__((weak));
uint32_t sp_intern(const char* name) __attribute__((weak));
uint64_t sp_now_ns(void) __attribute__((weak));
int sp_init(const sp_config* cfg) __attribute__((weak));
int sp_mark_step(int64_t step) __attribute__((weak));
int64_t sp_last_marked_step(void) __attribute__((weak));
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

namespace {
std::atomic<int64_t (*)()> g_last_marked_hook{nullptr};
std::atomic<int (*)(int64_t)> g_mark_hook{nullptr};
}  // namespace

void set_runtime_step_hooks(const RuntimeStepHooks& hooks) {
  g_last_marked_hook.store(hooks.last_marked_step);
  g_mark_hook.store(hooks.mark_step);
}

int runtime_init_from_env() {
  if (sp_init == nullptr) return SP_ERR_DISABLED;
  return sp_init(nullptr);
}

int64_t current_step_label() {
  if (auto* hook = g_last_marked_hook.load(std::memory_order_relaxed)) return hook() + 1;
  if (sp_last_marked_step == nullptr) return -1;
  const int64_t last = sp_last_marked_step();
  return last < 0 ? 0 : last + 1;
}

bool runtime_mark_step(int64_t step) {
  int rc = SP_ERR_DISABLED;
  if (auto* hook = g_mark_hook.load(std::memory_order_relaxed)) {
    rc = hook(step);
  } else if (sp_mark_step != nullptr) {
    rc = sp_mark_step(step);
  }
  return rc == SP_OK;
}

uint64_t runtime_marked_steps() {
  const int64_t label = current_step_label();
  return label > 0 ? static_cast<uint64_t>(label) : 0;
}

}  // namespace sp::gpu
