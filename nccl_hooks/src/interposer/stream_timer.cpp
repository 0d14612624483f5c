#include "interposer/stream_timer.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "nccl_emit.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/graph_capture.h"

namespace sp::nccl {

const char* why_no_stream_timing(const char* timing_env, const char* max_connections_env) {
  // "host" is the value's name until 0.x ("host" now means the machine only), kept for a release.
  if (timing_env != nullptr && (std::strcmp(timing_env, "cpu") == 0 || std::strcmp(timing_env, "host") == 0)) {
    return "NCCL operations timed on the CPU (STRAGGLER_PROBE_NCCL_TIMING=cpu)";
  }
  if (max_connections_env != nullptr && std::strcmp(max_connections_env, "1") == 0) {
    return "CUDA_DEVICE_MAX_CONNECTIONS=1: no timing events on NCCL's streams (they would serialise "
           "communication with compute); the interposer records CPU times, GPU times of NCCL "
           "operations come from the NCCL profiler plugin (NCCL_PROFILER_PLUGIN=<this library>) and "
           "CUPTI's NCCL kernel records";
  }
  return nullptr;
}

struct StreamTimer::Pending {
  void* start_event = nullptr;  // created at the slot's first use, kept for its next ones
  void* end_event = nullptr;
  sp_event ev{};
};

StreamTimer::StreamTimer(const CudaRt& rt, StreamTimerOptions opts)
    : rt_(rt),
      opts_(opts),
      slots_(new Pending[std::clamp<size_t>(opts.max_in_flight, 1, kMaxSlots)]),
      free_(static_cast<uint32_t>(std::clamp<size_t>(opts.max_in_flight, 1, kMaxSlots))),
      submitted_(std::make_unique<runtime::BoundedMpscQueue<uint32_t, 2 * kMaxSlots>>()) {
  in_flight_.reserve(free_.size());
}

StreamTimer::~StreamTimer() {
  stop();
  // CUDA events are not destroyed: at process exit the runtime may already be gone.
}

bool StreamTimer::start() {
  if (started_.load()) return true;
  if (!rt_.complete()) return false;
  if (rt_.get_device(&device_) != kCudaSuccess) return false;
  if (rt_.stream_create_with_flags(&anchor_stream_, kCudaStreamNonBlocking) != kCudaSuccess) {
    return false;
  }
  for (void*& e : anchor_events_) {
    if (rt_.event_create_with_flags(&e, kCudaEventDefault) != kCudaSuccess) return false;
  }
  {
    std::lock_guard<std::mutex> lock(poll_mutex_);
    if (!anchor_locked()) return false;
  }
  started_.store(true);
  if (opts_.poll_ms > 0) {
    stop_ = false;
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sp_nccl_timer");  // top -H / perf show whose it is
      thread_main();
    });
  }
  return true;
}

void StreamTimer::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(cv_mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  started_.store(false);
}

bool StreamTimer::anchor_locked() {
  // Each try records one anchor event on our own idle stream, so the GPU stamps it as soon as it
  // is submitted: between the two CPU reads. The try with the tightest bracket becomes the
  // anchor (its event keeps its GPU time).
  uint64_t best_width = UINT64_MAX;
  for (void* e : anchor_events_) {
    const uint64_t h0 = gpu::probe_now_ns();
    if (rt_.event_record(e, anchor_stream_) != kCudaSuccess) return false;
    if (rt_.event_synchronize(e) != kCudaSuccess) return false;
    const uint64_t h1 = gpu::probe_now_ns();
    if (h1 - h0 < best_width) {
      best_width = h1 - h0;
      anchor_host_ns_ = h0 + (h1 - h0) / 2;
      anchor_event_ = e;
    }
  }
  last_anchor_ns_ = gpu::probe_now_ns();
  counters_.anchors.fetch_add(1, std::memory_order_relaxed);
  counters_.anchor_uncertainty_ns.store(best_width / 2, std::memory_order_relaxed);
  return true;
}

bool StreamTimer::capturing(void* stream) const {
  if (!started_.load(std::memory_order_relaxed)) return false;
  int status = 0;
  return rt_.stream_is_capturing(stream, &status) == kCudaSuccess && status != 0;
}

bool StreamTimer::prepare_slot(uint32_t slot) {
  Pending& p = slots_[slot];
  for (void** e : {&p.start_event, &p.end_event}) {
    if (*e == nullptr && rt_.event_create_with_flags(e, kCudaEventDefault) != kCudaSuccess) {
      *e = nullptr;
      return false;
    }
  }
  return true;
}

StreamTimer::Pending* StreamTimer::begin(void* stream) {
  if (!started_.load(std::memory_order_relaxed)) return nullptr;
  const uint32_t slot = free_.take();
  if (slot == IndexFreeList::kNone) {
    counters_.untimed_full.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Pending* p = &slots_[slot];
  if (!prepare_slot(slot) || rt_.event_record(p->start_event, stream) != kCudaSuccess) {
    free_.give(slot);
    counters_.record_failures.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return p;
}

bool StreamTimer::record_end(Pending* p, void* stream) {
  if (p == nullptr) return false;
  if (rt_.event_record(p->end_event, stream) != kCudaSuccess) {
    cancel(p);
    counters_.record_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void StreamTimer::submit(Pending* p, const sp_event& ev) {
  if (p == nullptr) return;
  p->ev = ev;
  // The queue has room for every slot twice over (stream_timer.h): a push cannot fail; the loop
  // only guards that reasoning.
  while (!submitted_->try_push(static_cast<uint32_t>(p - slots_.get()))) std::this_thread::yield();
}

void StreamTimer::end(Pending* p, void* stream, const sp_event& ev) {
  if (p == nullptr) return;
  if (!record_end(p, stream)) {
    emit_nccl_event(ev);  // CPU times, as given
    return;
  }
  submit(p, ev);
}

void StreamTimer::cancel(Pending* p) {
  if (p == nullptr) return;
  free_.give(static_cast<uint32_t>(p - slots_.get()));
}

void StreamTimer::emit_completed(uint32_t slot, int query) {
  Pending& p = slots_[slot];
  sp_event ev = p.ev;
  float from_anchor_ms = 0, duration_ms = 0;
  if (query == kCudaSuccess &&
      rt_.event_elapsed_time(&from_anchor_ms, anchor_event_, p.start_event) == kCudaSuccess &&
      rt_.event_elapsed_time(&duration_ms, p.start_event, p.end_event) == kCudaSuccess) {
    const auto offset = static_cast<int64_t>(static_cast<double>(from_anchor_ms) * 1e6);
    ev.start_ns = anchor_host_ns_ + static_cast<uint64_t>(offset);
    ev.end_ns = ev.start_ns + static_cast<uint64_t>(static_cast<double>(duration_ms) * 1e6);
    ev.time_source = SP_TIME_CUDA_EVENT;
    counters_.timed.fetch_add(1, std::memory_order_relaxed);
  }  // else: an error on the stream; the CPU times already in ev stand
  emit_nccl_event(ev);
  free_.give(slot);
}

size_t StreamTimer::poll() {
  std::lock_guard<std::mutex> poll_lock(poll_mutex_);
  if (!started_.load()) return 0;
  uint32_t slot = 0;
  while (submitted_->try_pop(&slot)) in_flight_.push_back(slot);
  if (gpu::graph_capture_underway()) {
    counters_.capture_pauses.fetch_add(1, std::memory_order_relaxed);
    return 0;  // a query now would invalidate the capture: wait for its end
  }
  if (gpu::probe_now_ns() - last_anchor_ns_ > uint64_t{opts_.reanchor_ms} * 1000000ull) {
    anchor_locked();
  }
  size_t done = 0;
  auto still = in_flight_.begin();
  for (const uint32_t s : in_flight_) {
    const int q = rt_.event_query(slots_[s].end_event);
    if (q == kCudaErrorNotReady) {
      *still++ = s;
      continue;
    }
    emit_completed(s, q);
    ++done;
  }
  in_flight_.erase(still, in_flight_.end());
  return done;
}

StreamTimerStats StreamTimer::stats() const {
  StreamTimerStats s;
#define SP_LOAD(name) s.name = counters_.name.load(std::memory_order_relaxed);
  SP_STREAM_TIMER_COUNTERS(SP_LOAD)
#undef SP_LOAD
  s.anchor_uncertainty_ns = counters_.anchor_uncertainty_ns.load(std::memory_order_relaxed);
  return s;
}

void StreamTimer::thread_main() {
  rt_.set_device(device_);  // the rank's device: the anchor and the events live there
  if (rt_.thread_exchange_capture_mode != nullptr) {
    // Our queries must never be what invalidates another thread's global-mode capture.
    int mode = kCudaStreamCaptureModeRelaxed;
    rt_.thread_exchange_capture_mode(&mode);
  }
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(cv_mutex_);
      cv_.wait_for(lk, std::chrono::milliseconds(opts_.poll_ms), [this] { return stop_; });
      if (stop_) break;
    }
    poll();
  }
  poll();
}

}  // namespace sp::nccl
