#include "interposer/stream_timer.h"

#include <chrono>

#include "nccl_emit.h"
#include "straggler_probe/gpu/event_sink.h"

namespace sp::nccl {

struct StreamTimer::Pending {
  void* start_event = nullptr;
  void* end_event = nullptr;
  sp_event ev{};
};

StreamTimer::StreamTimer(const CudaRt& rt, StreamTimerOptions opts) : rt_(rt), opts_(opts) {}

StreamTimer::~StreamTimer() {
  stop();
  for (Pending* p : all_pending_) delete p;
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
    thread_ = std::thread([this] { thread_main(); });
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
  // is submitted: between the two host reads. The try with the tightest bracket becomes the
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
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.anchors;
  stats_.anchor_uncertainty_ns = best_width / 2;
  return true;
}

bool StreamTimer::capturing(void* stream) const {
  if (!started_.load(std::memory_order_relaxed)) return false;
  int status = 0;
  return rt_.stream_is_capturing(stream, &status) == kCudaSuccess && status != 0;
}

void* StreamTimer::take_event() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_events_.empty()) {
      void* e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    if (events_created_ >= opts_.max_events) return nullptr;
    ++events_created_;
  }
  void* e = nullptr;
  if (rt_.event_create_with_flags(&e, kCudaEventDefault) != kCudaSuccess) {
    std::lock_guard<std::mutex> lock(mutex_);
    --events_created_;
    return nullptr;
  }
  return e;
}

void StreamTimer::give_event(void* e) {
  if (e == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_events_.push_back(e);
}

StreamTimer::Pending* StreamTimer::begin(void* stream) {
  if (!started_.load(std::memory_order_relaxed)) return nullptr;
  Pending* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_.size() >= opts_.max_in_flight) {
      ++stats_.untimed_full;
      return nullptr;
    }
    if (!free_pending_.empty()) {
      p = free_pending_.back();
      free_pending_.pop_back();
    } else {
      p = new Pending();
      all_pending_.push_back(p);
    }
  }
  p->start_event = take_event();
  if (p->start_event == nullptr || rt_.event_record(p->start_event, stream) != kCudaSuccess) {
    cancel(p);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.record_failures;
    return nullptr;
  }
  return p;
}

void StreamTimer::end(Pending* p, void* stream, const sp_event& ev) {
  if (p == nullptr) return;
  p->ev = ev;
  p->end_event = take_event();
  if (p->end_event == nullptr || rt_.event_record(p->end_event, stream) != kCudaSuccess) {
    emit_nccl_event(ev);  // host times, as given
    cancel(p);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.record_failures;
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  queued_.push_back(p);
}

void StreamTimer::cancel(Pending* p) {
  if (p == nullptr) return;
  give_event(p->start_event);
  give_event(p->end_event);
  p->start_event = p->end_event = nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  free_pending_.push_back(p);
}

size_t StreamTimer::poll() {
  std::lock_guard<std::mutex> poll_lock(poll_mutex_);
  if (!started_.load()) return 0;
  if (gpu::probe_now_ns() - last_anchor_ns_ > uint64_t{opts_.reanchor_ms} * 1000000ull) {
    anchor_locked();
  }
  std::vector<Pending*> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch = queued_;
  }
  std::vector<Pending*> done;
  for (Pending* p : batch) {
    const int q = rt_.event_query(p->end_event);
    if (q == kCudaErrorNotReady) continue;
    sp_event ev = p->ev;
    float from_anchor_ms = 0, duration_ms = 0;
    if (q == kCudaSuccess &&
        rt_.event_elapsed_time(&from_anchor_ms, anchor_event_, p->start_event) == kCudaSuccess &&
        rt_.event_elapsed_time(&duration_ms, p->start_event, p->end_event) == kCudaSuccess) {
      const auto offset = static_cast<int64_t>(static_cast<double>(from_anchor_ms) * 1e6);
      ev.start_ns = anchor_host_ns_ + static_cast<uint64_t>(offset);
      ev.end_ns = ev.start_ns + static_cast<uint64_t>(static_cast<double>(duration_ms) * 1e6);
      ev.time_source = SP_TIME_CUDA_EVENT;
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.timed;
    }  // else: an error on the stream; the host times already in ev stand
    emit_nccl_event(ev);
    done.push_back(p);
  }
  if (!done.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Pending*> rest;
    for (Pending* p : queued_) {
      bool finished = false;
      for (Pending* d : done) finished = finished || d == p;
      if (!finished) rest.push_back(p);
    }
    queued_.swap(rest);
  }
  for (Pending* p : done) cancel(p);
  return done.size();
}

StreamTimerStats StreamTimer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void StreamTimer::thread_main() {
  rt_.set_device(device_);  // the anchor and the events live on this device
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
