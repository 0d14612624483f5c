// Start, stop, fork and failure handling of the probe. Nothing here runs at load time: the
// process-wide state is created by the first sp_init, together with the fork and exit hooks.
#include <pthread.h>
#include <stdlib.h>

#include <fmt/format.h>

#include <chrono>
#include <mutex>

#include "capture/clock.h"
#include "consumer.h"
#include "lifecycle.h"
#include "straggler_probe/log.h"
#include "probe_state.h"
#include "recorder.h"

namespace sp::runtime {
namespace {

// Constant-initialised (no constructor runs at load); never destroyed before exit hooks.
std::atomic<Probe*> g_probe{nullptr};
std::atomic<bool> g_forked_child{false};
std::mutex g_lifecycle_mutex;

constexpr auto kStopTimeout = std::chrono::milliseconds(2000);
constexpr auto kExitStopTimeout = std::chrono::milliseconds(500);

// In the child of a fork (a data-loader worker): it must not record, and its copy of the
// consumer thread does not exist. Only async-signal-safe work here: no locks, no logging.
void on_fork_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
  if (Probe* p = g_probe.load(std::memory_order_relaxed)) {
    p->active_session.store(0, std::memory_order_relaxed);
  }
}

void on_exit() { shutdown_probe(kExitStopTimeout); }

Probe* create_probe() {
  Probe* p = nullptr;
  try {
    p = new Probe();
  } catch (const std::exception&) {
    return nullptr;
  }
  if (pthread_key_create(&p->thread_exit_key, &on_thread_exit) != 0) return nullptr;  // leaks p
  pthread_atfork(nullptr, nullptr, &on_fork_child);
  atexit(&on_exit);
  return p;
}

// Stops the session's consumer (lifecycle mutex held). false: it did not stop in time.
bool stop_consumer(Probe& p, std::chrono::milliseconds timeout) {
  if (!p.consumer) return true;
  if (p.consumer->stop(timeout)) {
    p.consumer.reset();
    return true;
  }
  // Stuck (a summary callback that does not return): leave it running, leaked, and never start
  // another consumer beside it.
  (void)p.consumer.release();
  p.failed.store(true, std::memory_order_release);
  log::warn("the consumer thread did not stop within the timeout (is a summary callback "
            "blocked?); straggler_probe stays off");
  return false;
}

}  // namespace

Probe::Probe() = default;

void Probe::wake_consumer() { wake_cv.notify_all(); }

namespace {
struct CallbackHolder {
  std::mutex mutex;
  SummaryCallbackSlot callback;
};
CallbackHolder& callback_holder() {
  static CallbackHolder* const holder = new CallbackHolder();  // never destroyed: see Probe
  return *holder;
}
}  // namespace

void store_summary_callback(SummaryCallbackSlot callback) {
  CallbackHolder& h = callback_holder();
  std::lock_guard lock(h.mutex);
  h.callback = callback;
}

SummaryCallbackSlot load_summary_callback() {
  CallbackHolder& h = callback_holder();
  std::lock_guard lock(h.mutex);
  return h.callback;
}

Probe* probe_instance() noexcept { return g_probe.load(std::memory_order_acquire); }

bool in_forked_child() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

void step_aside(const char* where, const char* what) noexcept {
  try {
    Probe* p = probe_instance();
    if (p == nullptr || in_forked_child()) return;
    p->failed.store(true, std::memory_order_release);
    p->active_session.store(0, std::memory_order_release);
    p->wake_consumer();
    log::warn_once(fmt::format("internal:{}", where),
                   fmt::format("internal error in {}: {}; straggler_probe steps aside (training "
                               "continues without it)", where, what));
  } catch (...) {
    // Logging itself failed: the probe is already off, which is all that matters.
  }
}

int init_probe(const sp_config* cfg) {
  if (in_forked_child()) return SP_ERR_DISABLED;
  std::lock_guard lock(g_lifecycle_mutex);
  Probe* p = g_probe.load(std::memory_order_acquire);
  if (p != nullptr && p->active_session.load(std::memory_order_acquire) != 0) {
    if (cfg != nullptr) log::debug("sp_init: already recording; the new configuration is ignored");
    return SP_OK;
  }
  if (p != nullptr && p->failed.load(std::memory_order_acquire)) return SP_ERR_DISABLED;

  ConfigResult resolved = resolve_config(cfg, process_environment());
  if (!resolved.config) {
    log::warn(resolved.error + "; straggler_probe stays off");
    return SP_ERR_INVALID;
  }
  const RuntimeConfig& c = *resolved.config;
  log::set_level(c.log_level);
  if (!c.enabled) {
    log::info("disabled by STRAGGLER_PROBE_ENABLE");
    return SP_ERR_DISABLED;
  }
  if (p == nullptr) {
    p = create_probe();
    if (p == nullptr) {
      log::warn("cannot allocate the probe's state; straggler_probe stays off");
      return SP_ERR_INTERNAL;
    }
    g_probe.store(p, std::memory_order_release);
  }
  log::set_context(fmt::format("rank={}", c.rank));

  // A fresh session: counters from zero, earlier leftovers discarded.
  p->config = c;
  p->rank.store(c.rank, std::memory_order_relaxed);
  p->world_size.store(c.world_size, std::memory_order_relaxed);
  p->ring_capacity.store(c.ring_capacity, std::memory_order_relaxed);
  p->max_threads.store(c.max_threads, std::memory_order_relaxed);
  p->rejected_thread_drops.store(0, std::memory_order_relaxed);
  p->threads_rejected.store(0, std::memory_order_relaxed);
  p->marks_dropped.store(0, std::memory_order_relaxed);
  p->annotations_dropped.store(0, std::memory_order_relaxed);
  p->steps_completed.store(0, std::memory_order_relaxed);
  p->events_discarded.store(0, std::memory_order_relaxed);
  p->cutter_annotations_dropped.store(0, std::memory_order_relaxed);
  p->last_marked_step.store(-1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < p->registry.table_size(); ++i) {
    ThreadSlot& s = p->registry.slot(i);
    s.base_pushed.store(s.pushed_total(), std::memory_order_relaxed);
    s.base_dropped.store(s.dropped_total(), std::memory_order_relaxed);
    s.base_unbalanced.store(s.regions_unbalanced.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
  }
  p->summaries.reset(c.queue_steps);

  auto consumer = std::make_unique<Consumer>(*p, c, probe_now_ns());
  consumer->discard_stale();
  std::string error;
  if (!consumer->start(&error)) {
    p->failed.store(true, std::memory_order_release);
    p->summaries.close();
    log::warn(error + "; straggler_probe stays off");
    return SP_ERR_INTERNAL;
  }
  p->consumer = std::move(consumer);
  p->active_session.store(++p->sessions_started, std::memory_order_release);
  log::info(fmt::format("recording: rank {} of {}, ring {} events x up to {} threads, queue {} "
                        "steps, grace {} ms", c.rank, c.world_size, c.ring_capacity, c.max_threads,
                        c.queue_steps, c.step_grace_ms));
  return SP_OK;
}

int shutdown_probe(std::chrono::milliseconds timeout) {
  if (in_forked_child()) return SP_ERR_DISABLED;
  std::lock_guard lock(g_lifecycle_mutex);
  Probe* p = g_probe.load(std::memory_order_acquire);
  if (p == nullptr) return SP_ERR_DISABLED;
  const bool was_active = p->active_session.exchange(0, std::memory_order_acq_rel) != 0;
  const bool had_consumer = p->consumer != nullptr;
  stop_consumer(*p, timeout);  // its final pass queues every marked step
  p->summaries.close();
  return was_active || had_consumer ? SP_OK : SP_ERR_DISABLED;
}

int collect_stats(sp_stats* out) {
  Probe* p = probe_instance();
  if (p == nullptr || in_forked_child()) return SP_ERR_DISABLED;
  sp_stats s{};
  for (uint32_t i = 0; i < p->registry.table_size(); ++i) {
    const ThreadSlot& slot = p->registry.slot(i);
    s.events_recorded += slot.pushed_total() - slot.base_pushed.load(std::memory_order_relaxed);
    s.events_dropped += slot.dropped_total() - slot.base_dropped.load(std::memory_order_relaxed);
    s.regions_unbalanced += slot.regions_unbalanced.load(std::memory_order_relaxed) -
                            slot.base_unbalanced.load(std::memory_order_relaxed);
    if (slot.state.load(std::memory_order_relaxed) == SlotState::kOwned) ++s.threads_registered;
  }
  s.events_dropped += p->rejected_thread_drops.load(std::memory_order_relaxed);
  s.steps_completed = p->steps_completed.load(std::memory_order_relaxed);
  s.steps_skipped = p->summaries.skipped();
  s.threads_rejected = p->threads_rejected.load(std::memory_order_relaxed);
  s.events_discarded = p->events_discarded.load(std::memory_order_relaxed);
  s.annotations_dropped = p->annotations_dropped.load(std::memory_order_relaxed) +
                          p->cutter_annotations_dropped.load(std::memory_order_relaxed);
  s.marks_dropped = p->marks_dropped.load(std::memory_order_relaxed);
  *out = s;
  return SP_OK;
}

}  // namespace sp::runtime
