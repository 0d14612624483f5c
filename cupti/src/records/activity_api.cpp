#include "activity_api.h"

#include <algorithm>
#include <cstdlib>

#include "loader/cupti_records.h"

namespace sp::cupti {
namespace {

std::atomic<ActivityApi*> g_registered{nullptr};
constexpr size_t kMaxOverflowBuffers = 4;

}  // namespace

ActivityApi::ActivityApi(const CuptiApi& api, int major, uint32_t version, BufferPool& pool)
    : api_(api), major_(major), version_(version), pool_(pool) {}

ActivityApi::~ActivityApi() {
  ActivityApi* self = this;
  g_registered.compare_exchange_strong(self, nullptr);
}

bool ActivityApi::can_refuse_buffers() const {
  // CUPTI 13 reports API versions like 130001; CUDA 12.x reports small integers (12.9 = 27).
  return major_ >= 13 || version_ >= 27;
}

void ActivityApi::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  ActivityApi* self = g_registered.load(std::memory_order_acquire);
  if (self == nullptr) {
    *buffer = nullptr;
    *size = 0;
    *max_records = 0;
    return;
  }
  self->buffer_requested(buffer, size, max_records);
}

void ActivityApi::on_buffer_completed(void* /*ctx*/, uint32_t /*stream*/, uint8_t* buffer,
                                      size_t /*size*/, size_t valid) {
  ActivityApi* self = g_registered.load(std::memory_order_acquire);
  if (self == nullptr) return;  // nothing to give it back to; CUPTI owned nothing of ours then
  self->buffer_completed(buffer, valid);
}

void ActivityApi::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many records as fit
  uint8_t* b = pool_.acquire();
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.buffers_requested;
  if (b == nullptr && !can_refuse_buffers() && overflow_.size() < kMaxOverflowBuffers) {
    b = static_cast<uint8_t*>(std::calloc(pool_.buffer_bytes(), 1));
    if (b != nullptr) {
      overflow_.push_back(b);
      ++stats_.overflow_buffers;
    }
  }
  if (b == nullptr) {
    ++stats_.buffers_refused;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = b;
  *size = pool_.buffer_bytes();
}

void ActivityApi::buffer_completed(uint8_t* buffer, size_t valid) {
  if (buffer == nullptr) return;
  const bool ours = pool_.owns(buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto ov = std::find(overflow_.begin(), overflow_.end(), buffer);
  if (!ours && ov == overflow_.end()) {
    // Another CUPTI client's buffer (it registered callbacks after us, we re-registered before it
    // got its buffers back). Not ours to parse or free.
    ++stats_.foreign_buffers;
    return;
  }
  const bool overflow = ov != overflow_.end();
  if (overflow) overflow_.erase(ov);
  ++stats_.buffers_completed;
  completed_.push_back(CompletedBuffer{buffer, std::min(valid, pool_.buffer_bytes()), overflow});
}

bool ActivityApi::enable_kind(uint32_t kind, bool required, std::string* error) {
  const CuptiResult r = api_.enable(kind);
  if (r == kCuptiSuccess) {
    enabled_kinds_.push_back(kind);
    return true;
  }
  if (required) {
    if (error != nullptr) {
      *error = "cuptiActivityEnable(" + std::to_string(kind) + ") failed: " + result_string(api_, r);
    }
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.optional_enable_failures;
  return false;
}

bool ActivityApi::enable(const ActivityKinds& kinds, std::string* error) {
  if (enabled()) return true;
  if (!api_.complete()) {
    if (error != nullptr) *error = "CUPTI Activity API incomplete";
    return false;
  }
  g_registered.store(this, std::memory_order_release);
  if (api_.set_attribute != nullptr) {
    // Our buffers are pre-zeroed (BufferPool), so CUPTI need not zero them on the app thread.
    uint8_t zeroed = 1;
    size_t len = sizeof(zeroed);
    if (api_.set_attribute(kAttrZeroedOutActivityBuffer, &len, &zeroed) != kCuptiSuccess) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.optional_enable_failures;  // CUPTI then zeroes buffers itself: slower, not wrong
    }
  }
  const CuptiResult r = api_.register_callbacks(&ActivityApi::on_buffer_requested,
                                                &ActivityApi::on_buffer_completed);
  if (r != kCuptiSuccess) {
    if (error != nullptr) *error = "cuptiActivityRegisterCallbacks failed: " + result_string(api_, r);
    return false;
  }
  enabled_kinds_.clear();
  if (!enable_kind(kKindConcurrentKernel, /*required=*/true, error)) return false;
  if (kinds.memcpy) enable_kind(kKindMemcpy, false, nullptr);
  if (kinds.memset) enable_kind(kKindMemset, false, nullptr);
  if (kinds.synchronization) enable_kind(kKindSynchronization, false, nullptr);
  if (kinds.cuda_events && api_.enable_cuda_event_device_timestamps != nullptr) {
    // Device timestamps on CUDA event records (CUDA 13 API); without them the records are useless.
    if (api_.enable_cuda_event_device_timestamps(1) == kCuptiSuccess) {
      enable_kind(kKindCudaEvent, false, nullptr);
    }
  }
  if (kinds.external_correlation && enable_kind(kKindExternalCorrelation, false, nullptr)) {
    enable_launch_api_records();
    ext_on_.store(true, std::memory_order_relaxed);
  }
  enabled_.store(true, std::memory_order_release);
  return true;
}

// CUPTI writes an EXTERNAL_CORRELATION record only for a launch that also writes an API record,
// and per-callback-id enabling alone writes none (seen on CUDA 13.0): the DRIVER and RUNTIME kinds
// must be on. So: both kinds, then every callback id off, then the launch and copy ids back on.
void ActivityApi::enable_launch_api_records() {
  if (api_.enable_driver_api == nullptr || api_.enable_runtime_api == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.api_filter_failures;
    return;
  }
  enable_kind(kKindDriver, false, nullptr);
  enable_kind(kKindRuntime, false, nullptr);
  // Unknown ids answer CUPTI_ERROR_INVALID_PARAMETER: the range is wider than any CUDA's table.
  for (uint32_t cbid = 1; cbid < 1024; ++cbid) {
    api_.enable_driver_api(cbid, 0);
    api_.enable_runtime_api(cbid, 0);
  }
  set_launch_api_records(1);
}

void ActivityApi::set_launch_api_records(uint8_t on) {
  uint64_t failures = 0;
  for (uint32_t cbid : kDriverLaunchCbids) failures += api_.enable_driver_api(cbid, on) != kCuptiSuccess;
  for (uint32_t cbid : kRuntimeLaunchCbids) failures += api_.enable_runtime_api(cbid, on) != kCuptiSuccess;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.api_filter_failures += failures;
}

void ActivityApi::disable() {
  const bool ext = ext_on_.exchange(false, std::memory_order_relaxed);
  if (!enabled()) return;
  if (ext && api_.enable_driver_api != nullptr && api_.enable_runtime_api != nullptr) {
    set_launch_api_records(0);
  }
  uint64_t failures = 0;
  for (auto it = enabled_kinds_.rbegin(); it != enabled_kinds_.rend(); ++it) {
    failures += api_.disable(*it) != kCuptiSuccess;
  }
  enabled_kinds_.clear();
  enabled_.store(false, std::memory_order_release);
  if (failures > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.optional_enable_failures += failures;
  }
}

CuptiResult ActivityApi::flush(bool forced) {
  // No lock held: CUPTI calls buffer_completed from inside.
  return api_.flush_all(forced ? kFlushForced : 0);
}

std::vector<CompletedBuffer> ActivityApi::take_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CompletedBuffer> out;
  out.swap(completed_);
  return out;
}

uint64_t ActivityApi::poll_dropped() {
  if (api_.get_num_dropped_records == nullptr) return 0;
  size_t dropped = 0;
  if (api_.get_num_dropped_records(nullptr, 0, &dropped) != kCuptiSuccess) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.dropped_records += dropped;
  return dropped;
}

void ActivityApi::push_external(uint64_t id) {
  if (!ext_on_.load(std::memory_order_relaxed) || api_.push_external_correlation_id == nullptr) {
    return;
  }
  if (api_.push_external_correlation_id(kProbeExternalKind, id) != kCuptiSuccess) {
    external_failures_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ActivityApi::pop_external() {
  if (api_.pop_external_correlation_id == nullptr) return;
  uint64_t last = 0;
  if (api_.pop_external_correlation_id(kProbeExternalKind, &last) != kCuptiSuccess) {
    external_failures_.fetch_add(1, std::memory_order_relaxed);
  }
}

ActivityApiStats ActivityApi::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ActivityApiStats out = stats_;
  out.external_push_failures = external_failures_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace sp::cupti
