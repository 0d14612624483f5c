// The CUPTI capture's lifecycle (cupti_capture.h): lazy start, the flush thread, stop, pause and
// resume around other CUPTI clients, and the hot-path tags (external correlation pushes). Window
// processing is capture_window.cpp's, stats and the report capture_report.cpp's.
#include "straggler_probe/gpu/cupti_capture.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "capture_state.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/capture_hooks.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/gpu/graph_capture.h"
#include "straggler_probe/log.h"

namespace sp::gpu {

namespace log = runtime::log;
namespace {

// Per-thread nesting of the regions this thread opened (an external-correlation push or a begin
// marker), so that a pop never closes what it did not open (capture may have been paused or
// stopped in between). Deeper nesting than the stack holds is counted and not bracketed.
struct OpenRegion {
  uint64_t external_id = 0;
  uint64_t begin_seq = 0;  // the begin marker; 0 for an external-correlation push
};
constexpr uint32_t kMaxOpenRegions = 32;
thread_local OpenRegion tl_open[kMaxOpenRegions];
thread_local uint32_t tl_push_depth = 0;
thread_local uint32_t tl_region_serial = 0;

std::atomic<bool> g_forked_child{false};
std::once_flag g_atfork_once;

void on_fork_child() { g_forked_child.store(true, std::memory_order_relaxed); }

}  // namespace

bool capture_in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

CuptiCapture& CuptiCapture::instance() {
  static CuptiCapture* c = new CuptiCapture();  // leaked: see header
  return *c;
}

CuptiCapture::CuptiCapture() : impl_(std::make_unique<Impl>()) {}

CuptiCapture::~CuptiCapture() { stop(); }

bool CuptiCapture::Impl::enable_locked(std::string* error) {
  cupti::ActivityKinds kinds;  // what is used, nothing more (activity_api.h)
  if (opts.kernels_only) kinds.memcpy = kinds.memset = false;
  kinds.external_correlation = opts.attribution == RegionAttributionMode::kExternalCorrelation;
  if (markers) kinds.memset = true;  // the markers are memsets
  if (!activity->enable(kinds, error)) return false;
  activity_fast.store(activity.get(), std::memory_order_release);
  if (markers) markers_fast.store(markers.get(), std::memory_order_release);
  return true;
}

void CuptiCapture::Impl::create_markers_locked() {
  if (opts.attribution != RegionAttributionMode::kMarkers || markers) return;
  std::string why;
  const cupti::CudaDriverApi driver =
      driver_override.complete() ? driver_override : cupti::resolve_cuda_driver(&why);
  if (!driver.complete()) {
    markers_unavailable = why;  // said once capture is on (no driver: one warning, not two)
    return;
  }
  markers = std::make_unique<cupti::LaunchMarkers>(driver);
}

bool CuptiCapture::Impl::start_locked(const cupti::CuptiApi& a, int maj, uint32_t ver,
                                      const CuptiCaptureOptions& o) {
  api = a;
  major = maj;
  version = ver;
  opts = o;
  pool = std::make_unique<cupti::BufferPool>(opts.buffer_bytes, opts.max_buffers);
  activity = std::make_unique<cupti::ActivityApi>(api, major, version, *pool);
  cupti::ParserOptions po;
  // The parser holds activities only for external correlations that may come later; launch
  // brackets hold their own (capture_window.cpp).
  po.hold_windows =
      opts.attribution == RegionAttributionMode::kExternalCorrelation ? opts.hold_windows : 0;
  create_markers_locked();
  // CUpti_ActivityCudaEvent2 (with deviceTimestamp) is what CUDA 13 writes; older CUPTIs write
  // the v1 record, whose bytes past eventId are not a timestamp.
  po.cuda_event_has_device_timestamp = major >= 13;
  parser = std::make_unique<cupti::ActivityParser>(po);
  std::string error;
  if (!enable_locked(&error)) {
    inactive_reason = error + " (no CUDA driver or GPU?)";
    log::warn_once("cupti_no_driver", "GPU kernel capture disabled: " + inactive_reason);
    activity_fast.store(nullptr);
    return false;
  }
  available.store(true);
  active.store(true, std::memory_order_release);
  if (!markers_unavailable.empty()) {
    log::warn_once("cupti_markers_unavailable", "GPU region attribution off (" +
                                                    markers_unavailable +
                                                    "); kernels are still captured");
  }
  calibrate_locked();

  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, &on_fork_child); });
  for (const char* env : {"KINETO_USE_DAEMON", "KINETO_CONFIG", "TEARDOWN_CUPTI"}) {
    if (std::getenv(env) != nullptr) {
      log::info(std::string(env) +
           " is set: on-demand torch profiling may take CUPTI over; the probe pauses when told "
           "(sp_cupti_pause / the Python package's profiler hook)");
    }
  }
  if (opts.flush_period_ms > 0) {
    {
      std::lock_guard<std::mutex> lk(cv_mutex);
      stop_thread = false;
      thread_done = false;
    }
    flusher = std::thread([this] {
      pthread_setname_np(pthread_self(), "sp_cupti_flush");  // top -H / perf show whose it is
      thread_main();
    });
  }
  log::info("CUPTI " + std::to_string(major) + " activity capture started (API version " +
       std::to_string(version) + ")");
  return true;
}

void CuptiCapture::Impl::thread_main() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(cv_mutex);
      cv.wait_for(lk, std::chrono::milliseconds(opts.flush_period_ms),
                  [this] { return flush_requested || stop_thread; });
      if (stop_thread) break;
      flush_requested = false;
    }
    if (capture_in_forked_child()) break;
    std::lock_guard<std::mutex> lock(state_mutex);
    if (active.load() && !paused.load()) process_locked(false);
  }
  std::lock_guard<std::mutex> lk(cv_mutex);
  thread_done = true;
  cv.notify_all();
}

void CuptiCapture::Impl::stop_thread_and_wait(std::chrono::milliseconds limit) {
  if (!flusher.joinable()) return;
  {
    std::unique_lock<std::mutex> lk(cv_mutex);
    stop_thread = true;
    cv.notify_all();
    // Bounded wait: at process exit a flush stuck inside CUPTI must not hang the job.
    if (!cv.wait_for(lk, limit, [this] { return thread_done; })) {
      lk.unlock();
      flusher.detach();
      return;
    }
  }
  flusher.join();
}

bool CuptiCapture::start() {
  if (capture_in_forked_child()) return false;
  if (impl_->active.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  if (impl_->attempted.load()) return impl_->active.load();
  std::string errors;
  const CuptiCaptureOptions opts = cupti_options_from_env(&errors);
  if (!errors.empty()) {
    errors.pop_back();
    log::warn_once("cupti_bad_env", errors);
  }
  if (!opts.enabled) {
    impl_->attempted.store(true);
    impl_->inactive_reason = "disabled by STRAGGLER_PROBE_CUPTI=0";
    log::info("GPU kernel capture disabled by STRAGGLER_PROBE_CUPTI=0");
    return false;
  }
  cupti::LoadedCupti loaded = cupti::load_cupti(cupti::loader_options_from_env());
  if (!loaded.ok()) {
    impl_->inactive_reason = loaded.error;
    if (loaded.retryable) {
      log::info(loaded.error);  // CUDA not in the process yet: a later trigger tries again
      return false;
    }
    impl_->attempted.store(true);
    log::warn_once("cupti_unavailable", "GPU kernel capture disabled: " + loaded.error);
    return false;
  }
  impl_->attempted.store(true);
  if (!impl_->start_locked(loaded.api, loaded.major, loaded.version, opts)) return false;
  // At exit, stop the flush thread before libraries are torn down (atexit handlers run before
  // the dynamic linker's destructors). No final flush: CUDA may already be shutting down.
  std::atexit([] {
    if (!g_forked_child.load()) {
      CuptiCapture::instance().impl_->stop_thread_and_wait(std::chrono::milliseconds(200));
    }
  });
  return true;
}

bool CuptiCapture::start_with(const cupti::CuptiApi& api, int major, uint32_t version,
                              const CuptiCaptureOptions& opts) {
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  if (impl_->active.load()) return true;
  impl_->attempted.store(true);
  return impl_->start_locked(api, major, version, opts);
}

void CuptiCapture::stop() {
  Impl& s = *impl_;
  if (capture_in_forked_child()) return;  // the parent's CUPTI state
  s.stop_thread_and_wait(std::chrono::milliseconds(500));
  std::lock_guard<std::mutex> lock(s.state_mutex);
  if (!s.active.load()) return;
  s.inactive_reason = "stopped";
  s.active.store(false);
  s.activity_fast.store(nullptr);
  s.markers_fast.store(nullptr);
  if (!s.paused.load()) {
    s.process_locked(true);
    s.activity->disable();
  }
  s.emit_held_locked();
}

bool CuptiCapture::pause(const char* reason) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  if (!s.active.load() || s.paused.load()) return false;
  // Hand everything back before another client takes the (process-global) Activity API.
  s.activity_fast.store(nullptr);
  s.markers_fast.store(nullptr);
  s.process_locked(true);
  s.activity->disable();
  s.emit_held_locked();
  s.brackets.clear();  // regions open now end while paused: their end markers are not recorded
  s.paused.store(true);
  s.inactive_reason = std::string("paused (") + (reason != nullptr ? reason : "requested") + ")";
  ++s.pauses;
  log::info(std::string("GPU capture paused: ") + (reason != nullptr ? reason : "requested"));
  return true;
}

bool CuptiCapture::resume() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  if (!s.active.load() || !s.paused.load()) return false;
  std::string error;
  // Re-register our callbacks and re-enable the kinds: the other client disabled them and
  // registered its own callbacks.
  if (!s.enable_locked(&error)) {
    log::warn_once("cupti_foreign_profiler", "GPU capture could not resume: " + error);
    return false;
  }
  // The time base may have changed (Kineto's TSC timestamp callback, which it cannot remove):
  // a sample against the old fit tells, counts the switch and starts a new fit.
  s.calibrate_locked();
  s.paused.store(false);
  log::info("GPU capture resumed");
  return true;
}

void CuptiCapture::request_flush() {
  Impl& s = *impl_;
  if (!s.active.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lk(s.cv_mutex);
    s.flush_requested = true;
  }
  s.cv.notify_one();
}

bool CuptiCapture::flush_now(bool forced) {
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  if (!impl_->active.load() || impl_->paused.load()) return false;
  return impl_->process_locked(forced);
}

bool CuptiCapture::push_region(uint32_t kind, int32_t microbatch, uint32_t name_id) {
  const RegionKey key{kind, microbatch, name_id};
  // The serial is the step the region runs in (mod 2^14), so that its GPU span, which arrives
  // long after the step's mark, can be pinned to that step; without the runtime, a counter.
  const int64_t step = current_step_label();
  const uint32_t serial = step >= 0 ? static_cast<uint32_t>(step) : ++tl_region_serial;
  return open_bracket(encode_region_id(key, serial));
}

void CuptiCapture::push_nccl_op(uint64_t op) { open_bracket(encode_nccl_op_id(op)); }

bool CuptiCapture::open_bracket(uint64_t external_id) {
  if (tl_push_depth >= kMaxOpenRegions) return false;
  if (cupti::LaunchMarkers* m = impl_->markers_fast.load(std::memory_order_acquire)) {
    // A graph capture under way: its kernels run at replay, under the replay's launch.
    if (graph_capture_underway()) return false;
    const uint64_t seq = m->issue_begin(external_id);
    if (seq == cupti::LaunchMarkers::kNoMarker) return false;
    tl_open[tl_push_depth++] = OpenRegion{external_id, seq};
    return true;
  }
  cupti::ActivityApi* a = impl_->activity_fast.load(std::memory_order_acquire);
  if (a == nullptr || !a->external_correlation_on()) return false;
  a->push_external(external_id);
  tl_open[tl_push_depth++] = OpenRegion{external_id, 0};
  return true;
}

void CuptiCapture::pop_region() {
  if (tl_push_depth == 0) return;
  const OpenRegion open = tl_open[--tl_push_depth];
  if (open.begin_seq != 0) {
    // Paused or stopped since: nothing to end (the brackets were cleared).
    if (cupti::LaunchMarkers* m = impl_->markers_fast.load(std::memory_order_acquire)) {
      m->issue_end(open.external_id, open.begin_seq);
    }
    return;
  }
  if (cupti::ActivityApi* a = impl_->activity_fast.load(std::memory_order_acquire)) {
    a->pop_external();
  } else if (impl_->activity) {
    impl_->activity->pop_external();  // paused: still balance CUPTI's per-thread stack
  }
}

void CuptiCapture::pop_nccl_op() { pop_region(); }

bool CuptiCapture::active() const {
  return impl_->active.load(std::memory_order_relaxed) &&
         !impl_->paused.load(std::memory_order_relaxed);
}

void CuptiCapture::set_nccl_kernel_observer(NcclKernelObserver fn, void* user) {
  impl_->nccl_observer_user.store(user, std::memory_order_relaxed);
  impl_->nccl_observer.store(fn, std::memory_order_release);
}

void CuptiCapture::reset_for_tests() {
  stop();
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  impl_->activity_fast.store(nullptr);
  impl_->markers_fast.store(nullptr);
  impl_->markers.reset();
  impl_->brackets = cupti::LaunchBrackets();
  impl_->undecided.clear();
  impl_->undecided_released = 0;
  impl_->driver_override = cupti::CudaDriverApi();
  impl_->activity.reset();
  impl_->pool.reset();
  impl_->parser.reset();
  impl_->regions = cupti::RegionAttribution();
  impl_->clock = cupti::ClockCalibration();
  impl_->windows = impl_->events_emitted = impl_->emit_failures = impl_->pauses = 0;
  impl_->memcpy_name = 0;
  impl_->inactive_reason = kCaptureNotStarted;
  impl_->attempted.store(false);
  impl_->available.store(false);
  impl_->paused.store(false);
  impl_->flusher = std::thread();
}

void CuptiCapture::set_cuda_driver_for_tests(const cupti::CudaDriverApi& driver) {
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  impl_->driver_override = driver;
}

// capture_hooks.h: the NCCL layer's view of the capture.
void capture_start() { CuptiCapture::instance().start(); }
void capture_request_flush() { CuptiCapture::instance().request_flush(); }
void tag_nccl_op(uint64_t op) { CuptiCapture::instance().push_nccl_op(op); }
void untag_nccl_op() { CuptiCapture::instance().pop_nccl_op(); }

}  // namespace sp::gpu
