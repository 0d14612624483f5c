#include "straggler_probe/gpu/cupti_capture.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "activity_api.h"
#include "activity_parser.h"
#include "buffer_pool.h"
#include "clock_calibration.h"
#include "cupti_loader.h"
#include "cupti_records.h"
#include "record_iterator.h"
#include "region_attribution.h"
#include "straggler_probe/gpu/event_sink.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/log.h"
#include "straggler_probe/op_kinds.h"
#include "straggler_probe/probe.h"

namespace sp::gpu {

namespace log = runtime::log;
namespace {

// Per-thread nesting of our external-correlation pushes, so that a pop never removes an id we did
// not push (capture may have been paused or stopped in between).
thread_local uint32_t tl_push_depth = 0;
thread_local uint32_t tl_region_serial = 0;

constexpr const char* kNotStarted = "not started (no sp_cupti_start and no CUDA communicator yet)";

std::atomic<bool> g_forked_child{false};
std::once_flag g_atfork_once;

void on_fork_child() { g_forked_child.store(true, std::memory_order_relaxed); }

// The report's name of a region type: the kind's (straggler_probe/op_kinds.h); kernels outside
// every region are under type 0, those of CUDA graph replays outside every region under their
// graph.
std::string_view region_type_name(uint32_t kind) {
  if (kind == 0) return "outside-regions";
  if (kind == cupti::kCudaGraphType) return "cuda-graph";  // "#<graph id>" follows
  return op_kind_name(kind, "kind");
}

uint64_t cupti_now(void* ctx) {
  const auto* api = static_cast<const cupti::CuptiApi*>(ctx);
  uint64_t ts = 0;
  api->get_timestamp(&ts);
  return ts;
}

uint64_t host_now(void*) { return probe_now_ns(); }

}  // namespace

struct CuptiCapture::Impl {
  // Serialises start/stop/pause/resume and window processing. Never taken by CUPTI callbacks.
  std::mutex state_mutex;
  std::atomic<bool> attempted{false};
  std::atomic<bool> available{false};
  std::atomic<bool> active{false};
  std::atomic<bool> paused{false};

  CuptiCaptureOptions opts;
  cupti::CuptiApi api;
  int major = 0;
  uint32_t version = 0;
  std::unique_ptr<cupti::BufferPool> pool;
  std::unique_ptr<cupti::ActivityApi> activity;
  std::atomic<cupti::ActivityApi*> activity_fast{nullptr};  // hot-path view of `activity`
  std::unique_ptr<cupti::ActivityParser> parser;
  cupti::RegionAttribution regions;
  cupti::ClockCalibration clock;
  uint64_t windows = 0;
  uint64_t events_emitted = 0;
  uint64_t emit_failures = 0;
  uint64_t pauses = 0;
  uint32_t memcpy_name = 0;
  // Why capture is not on, for the report (guarded by state_mutex).
  std::string inactive_reason = kNotStarted;

  std::atomic<NcclKernelObserver> nccl_observer{nullptr};
  std::atomic<void*> nccl_observer_user{nullptr};

  // Flush thread.
  std::thread flusher;
  std::mutex cv_mutex;
  std::condition_variable cv;
  bool flush_requested = false;
  bool stop_thread = false;
  bool thread_done = false;

  bool start_locked(const cupti::CuptiApi& a, int maj, uint32_t ver,
                    const CuptiCaptureOptions& o);
  bool enable_locked(std::string* error);
  void calibrate_locked();
  bool process_locked(bool forced);
  void emit_spans(std::vector<cupti::RegionSpan>& spans);
  // Emits what the parser and the region attribution still hold (activities waiting for their
  // correlation, spans not yet quiescent): capture stops or hands CUPTI to another client.
  void emit_held_locked();
  void emit(const sp_event& ev);
  void thread_main();
  void stop_thread_and_wait(std::chrono::milliseconds limit);
};

CuptiCapture& CuptiCapture::instance() {
  static CuptiCapture* c = new CuptiCapture();  // leaked: see header
  return *c;
}

CuptiCapture::CuptiCapture() : impl_(std::make_unique<Impl>()) {}

CuptiCapture::~CuptiCapture() { stop(); }

void CuptiCapture::Impl::emit(const sp_event& ev) {
  if (emit_event(ev) == SP_OK) {
    ++events_emitted;
  } else {
    ++emit_failures;
  }
}

void CuptiCapture::Impl::calibrate_locked() {
  if (api.get_timestamp == nullptr) return;
  clock.add(cupti::best_of_burst(&cupti_now, &api, &host_now, nullptr, 7));
}

bool CuptiCapture::Impl::enable_locked(std::string* error) {
  cupti::ActivityKinds kinds;  // what is used, nothing more (activity_api.h)
  if (opts.kernels_only) kinds.memcpy = kinds.memset = false;
  if (!activity->enable(kinds, error)) return false;
  activity_fast.store(activity.get(), std::memory_order_release);
  return true;
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
  po.hold_windows = opts.hold_windows;
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
    flusher = std::thread([this] { thread_main(); });
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
    if (g_forked_child.load(std::memory_order_relaxed)) break;
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

void CuptiCapture::Impl::emit_spans(std::vector<cupti::RegionSpan>& spans) {
  for (const cupti::RegionSpan& s : spans) {
    sp_event ev = blank_event();
    ev.start_ns = clock.to_host(s.gpu_start);
    ev.end_ns = clock.to_host(s.gpu_end);
    if (ev.end_ns < ev.start_ns) ev.end_ns = ev.start_ns;
    ev.kind = s.key.kind;
    ev.microbatch = s.key.microbatch;
    ev.name_id = s.key.name_id;
    ev.time_source = SP_TIME_CUPTI;
    // The step of the launch, recovered from the serial: the latest step <= the current one
    // congruent to it mod 2^14.
    const int64_t now_step = current_step_label();
    if (now_step >= 0) {
      const auto serial = static_cast<int64_t>(s.external_id & kRegionSerialMask);
      tag_step(ev, now_step - ((now_step - serial) & static_cast<int64_t>(kRegionSerialMask)));
    }
    emit(ev);
  }
  spans.clear();
}

void CuptiCapture::Impl::emit_held_locked() {
  std::vector<cupti::GpuActivity> rest;
  parser->drain(rest);
  for (const auto& a : rest) regions.add(a, windows + 1);
  std::vector<cupti::RegionSpan> spans;
  regions.take_all(spans);
  emit_spans(spans);
}

bool CuptiCapture::Impl::process_locked(bool forced) {
  if (!activity || g_forked_child.load(std::memory_order_relaxed)) return false;
  activity->flush(forced);
  std::vector<cupti::CompletedBuffer> buffers = activity->take_completed();
  std::vector<cupti::BufferView> views;
  views.reserve(buffers.size());
  for (const auto& b : buffers) views.push_back(cupti::BufferView{b.data, b.valid});

  std::vector<cupti::GpuActivity> acts;
  cupti::CuptiLibRecordIterator it(api);
  parser->parse_window(views, it, acts);
  for (const auto& b : buffers) {
    if (b.overflow) {
      std::free(b.data);
    } else {
      pool->release(b.data, b.valid);
    }
  }

  const uint64_t window = ++windows;
  // Calibrate before converting anything of this window: every window until a slope could be
  // fitted (the time base may be TSC ticks), then periodically to follow drift and catch a switch.
  if (!clock.slope_fitted() ||
      (opts.recalibrate_every_windows > 0 && window % opts.recalibrate_every_windows == 0)) {
    const uint32_t before = clock.time_base_changes();
    calibrate_locked();
    if (clock.time_base_changes() != before) {
      log::warn_once("cupti_time_base_changed",
                "CUPTI time base changed (another profiler installed a timestamp callback?); "
                "clock calibration restarted");
    }
  }
  NcclKernelObserver observer = nccl_observer.load(std::memory_order_acquire);
  for (const cupti::GpuActivity& a : acts) {
    regions.add(a, window);
    uint64_t op = 0;
    if (a.type == cupti::GpuActivity::Type::kKernel && observer != nullptr &&
        decode_nccl_op_id(a.external_id, &op)) {
      observer(op, clock.to_host(a.start), clock.to_host(a.end), a.name,
               nccl_observer_user.load(std::memory_order_relaxed));
    }
    if (a.type == cupti::GpuActivity::Type::kMemcpy) {
      sp_event ev = blank_event();
      ev.start_ns = clock.to_host(a.start);
      ev.end_ns = clock.to_host(a.end);
      if (ev.end_ns < ev.start_ns) ev.end_ns = ev.start_ns;
      ev.kind = SP_OP_MEMCPY;
      ev.bytes = a.bytes;
      ev.stream = a.stream;
      RegionKey key;
      if (decode_region_id(a.external_id, &key)) ev.microbatch = key.microbatch;
      if (memcpy_name == 0) memcpy_name = intern_name("gpu_memcpy");
      ev.name_id = memcpy_name;
      ev.time_source = SP_TIME_CUPTI;
      emit(ev);
    }
  }
  std::vector<cupti::RegionSpan> spans;
  regions.take_quiescent(window, spans);
  emit_spans(spans);

  const uint64_t dropped = activity->poll_dropped();
  if (dropped > 0) {
    log::warn_once("cupti_dropped",
              "CUPTI dropped " + std::to_string(dropped) +
                  " activity records (buffer pool full: raise STRAGGLER_PROBE_CUPTI_BUFFERS); "
                  "drops are counted in the GPU capture stats");
  }
  if (activity->stats().foreign_buffers > 0) {
    log::warn_once("cupti_foreign_profiler",
              "another CUPTI client (torch.profiler / Nsight?) registered activity buffers; GPU "
              "capture should be paused while it runs (sp_cupti_pause / sp_cupti_resume)");
  }
  return true;
}

bool CuptiCapture::start() {
  if (g_forked_child.load(std::memory_order_relaxed)) return false;
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
  if (g_forked_child.load(std::memory_order_relaxed)) return;  // the parent's CUPTI state
  s.stop_thread_and_wait(std::chrono::milliseconds(500));
  std::lock_guard<std::mutex> lock(s.state_mutex);
  if (!s.active.load()) return;
  s.inactive_reason = "stopped";
  s.active.store(false);
  s.activity_fast.store(nullptr);
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
  s.process_locked(true);
  s.activity->disable();
  s.emit_held_locked();
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
  // The time base may have changed (Kineto's TSC timestamp callback): calibrate from scratch.
  s.clock.reset();
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
  cupti::ActivityApi* a = impl_->activity_fast.load(std::memory_order_acquire);
  if (a == nullptr || !a->external_correlation_on()) return false;
  const RegionKey key{kind, microbatch, name_id};
  // The serial is the step the region runs in (mod 2^14), so that its GPU span, which arrives
  // long after the step's mark, can be pinned to that step; without the runtime, a counter.
  const int64_t step = current_step_label();
  const uint32_t serial = step >= 0 ? static_cast<uint32_t>(step) : ++tl_region_serial;
  a->push_external(encode_region_id(key, serial));
  ++tl_push_depth;
  return true;
}

void CuptiCapture::pop_region() {
  if (tl_push_depth == 0) return;
  --tl_push_depth;
  if (cupti::ActivityApi* a = impl_->activity_fast.load(std::memory_order_acquire)) {
    a->pop_external();
  } else if (impl_->activity) {
    impl_->activity->pop_external();  // paused: still balance CUPTI's per-thread stack
  }
}

void CuptiCapture::push_nccl_op(uint64_t op) {
  cupti::ActivityApi* a = impl_->activity_fast.load(std::memory_order_acquire);
  if (a == nullptr || !a->external_correlation_on()) return;
  a->push_external(encode_nccl_op_id(op));
  ++tl_push_depth;
}

void CuptiCapture::pop_nccl_op() { pop_region(); }

bool CuptiCapture::active() const {
  return impl_->active.load(std::memory_order_relaxed) &&
         !impl_->paused.load(std::memory_order_relaxed);
}

CuptiCaptureStats CuptiCapture::stats() const {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  CuptiCaptureStats out;
  out.available = s.available.load();
  out.active = s.active.load() && !s.paused.load();
  out.paused = s.paused.load();
  out.cupti_major = s.major;
  out.cupti_version = s.version;
  out.windows = s.windows;
#define SP_COPY(name) out.name = from.name;
  if (s.parser) {
    const cupti::ParserStats& from = s.parser->stats();
    SP_CUPTI_PARSER_COUNTERS(SP_COPY)
  }
  if (s.activity) {
    const cupti::ActivityApiStats from = s.activity->stats();
    SP_CUPTI_ACTIVITY_COUNTERS(SP_COPY)
  }
#undef SP_COPY
  out.tagged_activities = s.regions.stats().tagged;
  out.untagged_activities = s.regions.stats().untagged;
  out.nccl_kernels = s.regions.stats().nccl_tagged;
  out.events_emitted = s.events_emitted;
  out.emit_failures = s.emit_failures;
  out.pauses = s.pauses;
  out.clock_skew_ppm = s.clock.skew_ppm();
  out.clock_offset_ns = s.clock.offset_ns();
  out.clock_uncertainty_ns = s.clock.uncertainty_ns();
  out.time_base_changes = s.clock.time_base_changes();
  return out;
}

std::string CuptiCapture::report(size_t top_k) const {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.state_mutex);
  std::ostringstream os;
  if (s.active.load() && !s.paused.load()) {
    const cupti::RegionAttributionStats& r = s.regions.stats();
    os << "GPU capture active: CUPTI " << s.major << ", "
       << (s.parser ? s.parser->stats().kernels : 0) << " kernels, " << r.tagged
       << " activities in regions, " << r.untagged << " outside, " << r.nccl_tagged
       << " in NCCL operations";
    // Losses belong next to the figures they make incomplete.
    if (s.activity) {
      const cupti::ActivityApiStats a = s.activity->stats();
      os << ", " << a.dropped_records << " records dropped, " << a.buffers_refused
         << " buffers refused";
    }
    os << "\n";
  } else {
    os << "GPU capture inactive: " << s.inactive_reason << "\n";
  }
  for (const auto& [kind, name_id] : s.regions.region_types()) {
    os << region_type_name(kind);
    if (name_id != 0) os << "#" << name_id;
    os << ":\n";
    for (const cupti::TopKernel& k : s.regions.top_kernels(kind, name_id, top_k)) {
      os << "  " << k.name << " count=" << k.count << " total_us=" << k.total_ns / 1000
         << " max_us=" << k.max_ns / 1000 << "\n";
    }
  }
  return os.str();
}

void CuptiCapture::set_nccl_kernel_observer(NcclKernelObserver fn, void* user) {
  impl_->nccl_observer_user.store(user, std::memory_order_relaxed);
  impl_->nccl_observer.store(fn, std::memory_order_release);
}

void CuptiCapture::reset_for_tests() {
  stop();
  std::lock_guard<std::mutex> lock(impl_->state_mutex);
  impl_->activity_fast.store(nullptr);
  impl_->activity.reset();
  impl_->pool.reset();
  impl_->parser.reset();
  impl_->regions = cupti::RegionAttribution();
  impl_->clock = cupti::ClockCalibration();
  impl_->windows = impl_->events_emitted = impl_->emit_failures = impl_->pauses = 0;
  impl_->memcpy_name = 0;
  impl_->inactive_reason = kNotStarted;
  impl_->attempted.store(false);
  impl_->available.store(false);
  impl_->paused.store(false);
  impl_->flusher = std::thread();
}

}  // namespace sp::gpu
