#include "consumer.h"

#include <pthread.h>
#include <signal.h>

#include <fmt/format.h>

#include <utility>

#include "capture/clock.h"
#include "straggler_probe/log.h"
#include "probe_state.h"

namespace sp::runtime {
namespace {

constexpr uint32_t kMaxAnnotationsPerStep = 4096;
constexpr uint32_t kMaxPendingSteps = 64;

}  // namespace

Consumer::Consumer(Probe& probe, const RuntimeConfig& config, uint64_t origin_ns)
    : probe_(probe),
      config_(config),
      cutter_(StepCutter::Limits{config.max_events_per_step, kMaxAnnotationsPerStep,
                                       kMaxPendingSteps},
                 origin_ns),
      drops_seen_(probe.registry.table_size(), 0) {}

Consumer::~Consumer() {
  if (thread_.joinable()) thread_.detach();  // only reached if stop() was never called
}

void Consumer::discard_stale() {
  StepMark mark;
  while (probe_.marks.try_pop(&mark)) {
  }
  ThreadRegistry& reg = probe_.registry;
  const uint32_t hw = reg.high_water();
  for (uint32_t i = 0; i < hw; ++i) {
    ThreadSlot& slot = reg.slot(i);
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kOwned || state == SlotState::kOrphaned) {
      slot.buffer.load(std::memory_order_acquire)->ring->discard_all();
    }
    if (state == SlotState::kOrphaned) reg.recycle(&slot);
  }
  for (uint32_t i = 0; i < reg.table_size(); ++i) drops_seen_[i] = reg.slot(i).dropped_total();
  rejected_seen_ = probe_.rejected_thread_drops.load(std::memory_order_relaxed);
  flushes_seen_ = probe_.flush_requests.load(std::memory_order_relaxed);
  std::lock_guard lock(probe_.annotation_mutex);
  probe_.annotation_inbox.clear();
}

bool Consumer::start(std::string* error) {
  try {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sp_consumer");  // top -H / perf show whose it is
      run();
    });
    return true;
  } catch (const std::exception& e) {
    *error = fmt::format("cannot start the consumer thread: {}", e.what());
    return false;
  }
}

bool Consumer::stop(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(probe_.wake_mutex);
    stop_requested_ = true;
  }
  probe_.wake_cv.notify_all();
  bool finished = false;
  {
    std::unique_lock lock(probe_.wake_mutex);
    finished = finished_cv_.wait_for(lock, timeout, [this] { return finished_; });
  }
  if (!thread_.joinable()) return true;
  if (finished) {
    thread_.join();
    return true;
  }
  abandoned_.store(true, std::memory_order_release);
  thread_.detach();
  return false;
}

void Consumer::run() noexcept {
  // Signals belong to the application's threads (Python handles SIGINT on its main thread).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  try {
    const auto interval = std::chrono::milliseconds(config_.drain_interval_ms);
    for (;;) {
      bool stop = false;
      {
        std::unique_lock lock(probe_.wake_mutex);
        probe_.wake_cv.wait_for(lock, interval, [this] {
          return stop_requested_ ||
                 probe_.flush_requests.load(std::memory_order_relaxed) != flushes_seen_;
        });
        stop = stop_requested_;
      }
      if (abandoned_.load(std::memory_order_acquire) ||
          probe_.failed.load(std::memory_order_acquire)) {
        break;
      }
      pass(stop);
      if (stop) break;
    }
  } catch (const std::exception& e) {
    step_aside("consumer thread", e.what());
  } catch (...) {
    step_aside("consumer thread", "unknown exception");
  }
  {
    std::lock_guard lock(probe_.wake_mutex);
    finished_ = true;
  }
  finished_cv_.notify_all();
}

void Consumer::pass(bool final_pass) {
  const uint64_t now = probe_now_ns();
  // Read before taking the marks (acquire, paired with sp_flush's release): a pass forced by a
  // flush then holds every step marked before that flush, so none of them waits for the grace
  // (at exit nobody would be left to pop it).
  const uint64_t flushes = probe_.flush_requests.load(std::memory_order_acquire);
  const bool force = final_pass || flushes != flushes_seen_;
  flushes_seen_ = flushes;
  StepMark mark;
  while (probe_.marks.try_pop(&mark)) {
    heartbeat_.mark(mark);
    cutter_.add_mark(mark);
  }

  ThreadRegistry& reg = probe_.registry;
  const uint32_t hw = reg.high_water();
  uint64_t new_drops = 0;
  for (uint32_t i = 0; i < hw; ++i) {
    ThreadSlot& slot = reg.slot(i);
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kOwned || state == SlotState::kOrphaned) {
      slot.buffer.load(std::memory_order_acquire)->ring->drain([this](const sp_event& ev) {
        heartbeat_.event(ev);
        cutter_.add_event(ev);
      });
    }
    const uint64_t dropped = slot.dropped_total();
    new_drops += dropped - drops_seen_[i];
    drops_seen_[i] = dropped;
    if (state == SlotState::kOrphaned) reg.recycle(&slot);
  }
  const uint64_t rejected = probe_.rejected_thread_drops.load(std::memory_order_relaxed);
  new_drops += rejected - rejected_seen_;
  rejected_seen_ = rejected;
  if (new_drops != 0) {
    cutter_.add_ring_drops(new_drops);
    if (!warned_ring_full_) {
      warned_ring_full_ = true;
      log::warn_once("events_dropped",
                     fmt::format("events are being dropped ({} so far in this pass): a thread's "
                                 "ring is full or too many threads record; dropped events are "
                                 "counted per step (raise STRAGGLER_PROBE_RING_CAPACITY or "
                                 "STRAGGLER_PROBE_MAX_THREADS)", new_drops));
    }
  }

  std::vector<PendingAnnotation> annotations;
  {
    std::lock_guard lock(probe_.annotation_mutex);
    annotations.swap(probe_.annotation_inbox);
  }
  for (PendingAnnotation& a : annotations) cutter_.add_annotation(a.t_ns, std::move(a.annotation));

  const uint64_t grace_ns = static_cast<uint64_t>(config_.step_grace_ms) * 1000000ull;
  // Steps closed together by a flush or the shutdown may overfill the queue by up to the
  // step cutter's pending-step cap: they are the job's last steps, and nobody may pop them in
  // time to make room (bounded all the same).
  const size_t extra_room = force ? kMaxPendingSteps : 0;
  cutter_.close_ready(now, grace_ns, force, [this, extra_room](StepSummary&& s) {
    emit(std::move(s), extra_room);
  });
  if (final_pass) cutter_.discard_open();
  heartbeat_.publish(probe_.heartbeat, probe_.names, now);
  probe_.events_discarded.store(cutter_.discarded(), std::memory_order_relaxed);
  probe_.cutter_annotations_dropped.store(cutter_.annotations_dropped(),
                                             std::memory_order_relaxed);
}

void restamp_queued_summaries(Probe& probe) {
  const int32_t rank = probe.rank.load(std::memory_order_relaxed);
  const int32_t world = probe.world_size.load(std::memory_order_relaxed);
  probe.summaries.update_all([rank, world](QueuedSummary& item) {
    if (item.summary.rank == rank && item.summary.world_size == world) return;
    item.summary.rank = rank;
    item.summary.world_size = world;
    item.encoded = encode_summary(item.summary);
  });
}

void Consumer::emit(StepSummary&& summary, size_t extra_room) {
  if (abandoned_.load(std::memory_order_acquire)) return;
  summary.rank = probe_.rank.load(std::memory_order_relaxed);
  summary.world_size = probe_.world_size.load(std::memory_order_relaxed);
  summary.dp_rank = probe_.dp_rank.load(std::memory_order_relaxed);
  summary.pp_stage = probe_.pp_stage.load(std::memory_order_relaxed);
  summary.clock_offset_ns = probe_.clock_offset_ns.load(std::memory_order_relaxed);
  probe_.names.localize(&summary);

  QueuedSummary item;
  item.encoded = encode_summary(summary);
  if (const SummaryCallbackSlot callback = load_summary_callback(); callback.fn != nullptr) {
    try {
      callback.fn(item.encoded.data(), item.encoded.size(), callback.user);
    } catch (const std::exception& e) {
      log::warn_once("summary_callback",
                     fmt::format("the summary callback threw ({}); it is still called for later "
                                 "steps", e.what()));
    } catch (...) {
      log::warn_once("summary_callback", "the summary callback threw; it is still called for "
                                         "later steps");
    }
  }
  item.summary = std::move(summary);
  probe_.steps_completed.fetch_add(1, std::memory_order_relaxed);
  const int32_t stamped_rank = item.summary.rank;
  const int32_t stamped_world = item.summary.world_size;
  if (!probe_.summaries.push(std::move(item), extra_room)) {
    log::warn_once("steps_skipped",
                   "the transport is not keeping up: the oldest queued step summaries are skipped "
                   "(counted in steps_skipped; raise STRAGGLER_PROBE_QUEUE_STEPS)");
  }
  // sp_set_rank may have re-stamped the queue between our stamp and our push
  if (stamped_rank != probe_.rank.load(std::memory_order_relaxed) ||
      stamped_world != probe_.world_size.load(std::memory_order_relaxed)) {
    restamp_queued_summaries(probe_);
  }
}

}  // namespace sp::runtime
