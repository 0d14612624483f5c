// A thin wrapper over the CUPTI Activity API (no callback subscriber, never cuptiFinalize).
//
// Owns the buffer callbacks (static trampolines to the one registered instance), enabling and
// disabling of the activity kinds, flushing, dropped-record accounting and the external
// correlation push/pop. Rule (Kineto #1347): CUPTI calls our buffer callbacks under its own lock,
// and they take our locks, so no lock of ours is ever held while calling into CUPTI.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "loader/cupti_loader.h"

namespace sp::cupti {

// The kinds enabled: only what the capture uses. Kernels (region spans, top kernels), memcpys
// (emitted as events) and memsets (in region spans) are used; SYNCHRONIZATION and CUDA_EVENT would
// only be counted, and every cudaEventQuery / cudaStreamSynchronize of the process (the probe's
// own included) would write a record, so they are off unless a caller asks (the parser still
// reads them).
struct ActivityKinds {
  bool kernels = true;               // CONCURRENT_KERNEL (required)
  bool memcpy = true;                // MEMCPY
  bool memset = true;                // MEMSET
  bool synchronization = false;      // SYNCHRONIZATION
  bool cuda_events = false;          // CUDA_EVENT with device timestamps (CUDA >= 13)
  // EXTERNAL_CORRELATION and the launch API records it rides on (STRAGGLER_PROBE_CUPTI_ATTRIBUTION=
  // external). Off by default: CUPTI writes the correlation only with an API record per launch,
  // which costs microseconds on the launching thread; launch markers attribute by default.
  bool external_correlation = false;
};

struct CompletedBuffer {
  uint8_t* data = nullptr;
  size_t valid = 0;
  bool overflow = false;  // allocated past the pool (old CUPTI cannot be refused a buffer)
};

struct ActivityApiStats {
  uint64_t buffers_requested = 0;
  uint64_t buffers_refused = 0;     // pool exhausted: CUPTI drops records and counts them
  uint64_t overflow_buffers = 0;
  uint64_t buffers_completed = 0;
  uint64_t foreign_buffers = 0;     // completed buffers we never handed out (another client's)
  uint64_t dropped_records = 0;     // cuptiActivityGetNumDroppedRecords, accumulated
  uint64_t optional_enable_failures = 0;
  uint64_t api_filter_failures = 0;
  uint64_t external_push_failures = 0;  // cuptiActivityPush/PopExternalCorrelationId refused  // launch callback ids CUPTI refused to trace (external mode)
};

class ActivityApi {
 public:
  ActivityApi(const CuptiApi& api, int major, uint32_t version, BufferPool& pool);
  ~ActivityApi();
  ActivityApi(const ActivityApi&) = delete;
  ActivityApi& operator=(const ActivityApi&) = delete;

  // Registers the buffer callbacks (making this the instance they reach), sets the zeroed-buffer
  // attribute and enables the kinds. Fails (and undoes what it did) if kernels cannot be enabled,
  // which is what happens without a CUDA driver.
  bool enable(const ActivityKinds& kinds, std::string* error);
  // Disables the kinds this instance enabled; callbacks stay registered.
  void disable();
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }

  // cuptiActivityFlushAll; `forced` also returns buffers with incomplete records.
  CuptiResult flush(bool forced);
  std::vector<CompletedBuffer> take_completed();
  // Reads (and so resets) CUPTI's dropped-record counter; returns the number read now.
  uint64_t poll_dropped();

  // Per-thread external correlation (kind CUSTOM2). Cheap no-ops unless enabled.
  void push_external(uint64_t id);
  void pop_external();
  bool external_correlation_on() const { return ext_on_.load(std::memory_order_relaxed); }

  ActivityApiStats stats() const;
  const CuptiApi& api() const { return api_; }
  int major() const { return major_; }
  // CUPTI may be refused a buffer (nullptr) only from API version 27 (CUDA 12.9) on; earlier
  // versions can crash (Kineto's note), so they get a bounded overflow buffer instead.
  bool can_refuse_buffers() const;

  static void on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void on_buffer_completed(void* ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid);

 private:
  void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void buffer_completed(uint8_t* buffer, size_t valid);
  bool enable_kind(uint32_t kind, bool required, std::string* error);
  void enable_launch_api_records();
  void set_launch_api_records(uint8_t on);

  CuptiApi api_;
  int major_;
  uint32_t version_;
  BufferPool& pool_;
  std::atomic<bool> enabled_{false};
  std::atomic<bool> ext_on_{false};
  std::atomic<uint64_t> external_failures_{0};  // hot path: counted without the lock
  std::vector<uint32_t> enabled_kinds_;

  mutable std::mutex mutex_;  // guards completed_, overflow_, stats_
  std::vector<CompletedBuffer> completed_;
  std::vector<uint8_t*> overflow_;
  ActivityApiStats stats_;
};

}  // namespace sp::cupti
