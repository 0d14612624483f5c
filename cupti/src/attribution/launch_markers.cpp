#include "launch_markers.h"

#include "straggler_probe/log.h"

namespace sp::cupti {

uint64_t LaunchMarkers::issue_begin(uint64_t external_id) {
  return issue(external_id, 0, /*is_begin=*/true);
}

bool LaunchMarkers::issue_end(uint64_t external_id, uint64_t begin_seq) {
  return issue(external_id, begin_seq, /*is_begin=*/false) != kNoMarker;
}

uint64_t LaunchMarkers::issue(uint64_t external_id, uint64_t begin_seq, bool is_begin) {
  if (!usable()) return kNoMarker;
  CuContext ctx = nullptr;
  const CuResult rc = driver_.ctx_get_current(&ctx);
  if (rc != kCuSuccess) {
    fail("cuCtxGetCurrent", rc);
    return kNoMarker;
  }
  if (ctx == nullptr) {
    no_context_.fetch_add(1, std::memory_order_relaxed);
    return kNoMarker;
  }
  const ContextSlot* slot = slot_for(ctx);
  if (slot == nullptr) return kNoMarker;

  const uint64_t seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  Entry& e = ring_[seq & (kRingSize - 1)];
  e.seq.store(0, std::memory_order_relaxed);  // torn while rewritten: a reader sees no match
  // Release stores rather than a fence keep seq = 0 before them; ThreadSanitizer models these,
  // not fences (on x86 both are plain stores).
  e.external_id.store(external_id, std::memory_order_release);
  e.begin_seq.store(is_begin ? seq : begin_seq, std::memory_order_release);
  e.seq.store(seq, std::memory_order_release);

  int mode = kCuCaptureModeRelaxed;
  const bool exchanged = driver_.exchange_capture_mode != nullptr &&
                         driver_.exchange_capture_mode(&mode) == kCuSuccess;
  const uint32_t value = kValueTag | static_cast<uint32_t>(seq & kSeqMask);
  const CuResult mr = driver_.memset_d32_async(slot->target, value, 1, slot->stream);
  if (exchanged) driver_.exchange_capture_mode(&mode);  // back to the thread's own mode
  if (mr != kCuSuccess) {
    fail("cuMemsetD32Async", mr);
    return kNoMarker;
  }
  issued_.fetch_add(1, std::memory_order_relaxed);
  return seq;
}

const LaunchMarkers::ContextSlot* LaunchMarkers::slot_for(CuContext ctx) {
  for (const ContextSlot& s : slots_) {
    const CuContext c = s.context.load(std::memory_order_acquire);
    if (c == ctx) return &s;
    if (c == nullptr) break;  // slots fill in order
  }
  // First marker in this context: its own stream (non-blocking: never ordered with the job's
  // streams, the legacy default stream included) and a 4-byte target. Once per context.
  std::lock_guard<std::mutex> lock(slots_mutex_);
  for (ContextSlot& s : slots_) {
    const CuContext c = s.context.load(std::memory_order_acquire);
    if (c == ctx) return &s;
    if (c != nullptr) continue;
    int mode = kCuCaptureModeRelaxed;
    const bool exchanged = driver_.exchange_capture_mode != nullptr &&
                           driver_.exchange_capture_mode(&mode) == kCuSuccess;
    CuResult r = driver_.mem_alloc(&s.target, 256);
    if (r == kCuSuccess) r = driver_.stream_create(&s.stream, kCuStreamNonBlocking);
    if (exchanged) driver_.exchange_capture_mode(&mode);
    if (r != kCuSuccess) {
      fail("cuMemAlloc/cuStreamCreate for the launch markers", r);
      return nullptr;
    }
    unsigned long long id = 0;
    if (driver_.stream_get_id(s.stream, &id) == kCuSuccess && stream_id_.load() == 0) {
      stream_id_.store(id);  // diagnosis only: CUPTI's record names the stream its own way
    }
    s.context.store(ctx, std::memory_order_release);
    return &s;
  }
  fail("more CUDA contexts than the markers track", 0);
  return nullptr;
}

void LaunchMarkers::fail(const char* what, CuResult r) {
  failed_calls_.fetch_add(1, std::memory_order_relaxed);
  if (failed_.exchange(true)) return;
  std::string msg = std::string(what) + " failed";
  if (r != kCuSuccess) msg += ": " + cu_result_string(driver_, r);
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    last_error_ = msg;
  }
  runtime::log::warn_once("cupti_markers_failed",
                          "GPU region attribution stopped (" + msg +
                              "); kernels are still captured, outside regions");
}

bool LaunchMarkers::lookup(uint32_t value, Marker* out) {
  const uint32_t low = value & kSeqMask;
  // The entry of the newest sequence number with these low bits that can still be in the ring.
  Entry& e = ring_[low & (kRingSize - 1)];
  const uint64_t seq = e.seq.load(std::memory_order_acquire);
  if (seq == 0 || (seq & kSeqMask) != low) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Acquire loads: the re-check of seq below cannot move before them (no fence: see issue()).
  out->external_id = e.external_id.load(std::memory_order_acquire);
  out->begin_seq = e.begin_seq.load(std::memory_order_acquire);
  if (e.seq.load(std::memory_order_relaxed) != seq) {  // rewritten while read
    lost_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  out->seq = seq;
  out->is_begin = out->begin_seq == seq;
  return true;
}

LaunchMarkerStats LaunchMarkers::stats() const {
  LaunchMarkerStats s;
  s.issued = issued_.load(std::memory_order_relaxed);
  s.failed = failed_calls_.load(std::memory_order_relaxed);
  s.no_context = no_context_.load(std::memory_order_relaxed);
  s.lost = lost_.load(std::memory_order_relaxed);
  s.stream_id = stream_id_.load(std::memory_order_relaxed);
  return s;
}

std::string LaunchMarkers::last_error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return last_error_;
}

}  // namespace sp::cupti
