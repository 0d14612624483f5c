// Builds CUPTI activity buffers byte for byte as CUDA 13 lays them out, for GPU-free tests.
//
// With the CUDA headers available the records are the real CUPTI structs
// (CUpti_ActivityKernel10, ...), an independent check of the probe's own declarations; without
// them they are filled through the probe's prefix declarations at the CUDA 13 record sizes.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "cupti_records.h"
#ifdef SP_HAVE_CUPTI_HEADERS
#include <cupti.h>
#endif

namespace sp::cupti::testing {

class SyntheticActivityBuffer {
 public:
  SyntheticActivityBuffer& kernel(uint64_t start, uint64_t end, uint32_t correlation,
                                  const char* name, uint32_t stream = 7, uint32_t device = 0) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivityKernel10 r{};
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.name = name;
    r.streamId = stream;
    r.deviceId = device;
    r.contextId = 1;
    r.gridX = 128;
    append(&r, sizeof(r));
#else
    KernelRecord r{};
    r.kind = kKindConcurrentKernel;
    r.start = start;
    r.end = end;
    r.correlation_id = correlation;
    r.name = name;
    r.stream_id = stream;
    r.device_id = device;
    r.context_id = 1;
    append(&r, sizeof(r), kKernelRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& memcpy_rec(uint64_t start, uint64_t end, uint32_t correlation,
                                      uint64_t bytes, uint8_t copy_kind = 1) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivityMemcpy6 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = copy_kind;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.streamId = 7;
    append(&r, sizeof(r));
#else
    MemcpyRecord r{};
    r.kind = kKindMemcpy;
    r.copy_kind = copy_kind;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.correlation_id = correlation;
    r.stream_id = 7;
    append(&r, sizeof(r), kMemcpyRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& memset_rec(uint64_t start, uint64_t end, uint32_t correlation,
                                      uint64_t bytes) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivityMemset4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    append(&r, sizeof(r));
#else
    MemsetRecord r{};
    r.kind = kKindMemset;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.correlation_id = correlation;
    append(&r, sizeof(r), kMemsetRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& sync(uint64_t start, uint64_t end, uint32_t correlation, uint32_t type,
                                uint32_t event_id = 0) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivitySynchronization2 r{};
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = static_cast<CUpti_ActivitySynchronizationType>(type);
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.cudaEventId = event_id;
    r.streamId = 7;
    append(&r, sizeof(r));
#else
    SynchronizationRecord r{};
    r.kind = kKindSynchronization;
    r.type = type;
    r.start = start;
    r.end = end;
    r.correlation_id = correlation;
    r.cuda_event_id = event_id;
    r.stream_id = 7;
    append(&r, sizeof(r), kSynchronizationRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& cuda_event(uint64_t device_ts, uint32_t correlation, uint32_t event_id) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivityCudaEvent2 r{};
    r.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    r.correlationId = correlation;
    r.eventId = event_id;
    r.streamId = 7;
    r.deviceTimestamp = device_ts;
    append(&r, sizeof(r));
#else
    CudaEventRecord r{};
    r.kind = kKindCudaEvent;
    r.correlation_id = correlation;
    r.event_id = event_id;
    r.stream_id = 7;
    r.device_timestamp = device_ts;
    append(&r, sizeof(r), kCudaEventRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& external(uint32_t external_kind, uint64_t id, uint32_t correlation) {
#ifdef SP_HAVE_CUPTI_HEADERS
    CUpti_ActivityExternalCorrelation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(external_kind);
    r.externalId = id;
    r.correlationId = correlation;
    append(&r, sizeof(r));
#else
    ExternalCorrelationRecord r{};
    r.kind = kKindExternalCorrelation;
    r.external_kind = external_kind;
    r.external_id = id;
    r.correlation_id = correlation;
    append(&r, sizeof(r), kExternalCorrelationRecordSize13);
#endif
    return *this;
  }

  SyntheticActivityBuffer& api(uint32_t kind, uint32_t cbid, uint32_t correlation) {
    ApiRecord r{};
    r.kind = kind;
    r.cbid = cbid;
    r.start = 1;
    r.end = 2;
    r.correlation_id = correlation;
    append(&r, sizeof(r), kApiRecordSize13);
    return *this;
  }

  // A record of a kind the parser does not read (e.g. MARKER = 12) with a plausible size.
  SyntheticActivityBuffer& raw(uint32_t kind, size_t size) {
    std::vector<uint8_t> r(size, 0);
    std::memcpy(r.data(), &kind, sizeof(kind));
    append(r.data(), size, size);
    return *this;
  }

  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }
  size_t size() const { return bytes_; }

 private:
  void append(const void* rec, size_t n, size_t padded = 0) {
    const size_t total = padded > n ? padded : n;
    const size_t new_bytes = bytes_ + ((total + 7) & ~size_t{7});
    words_.resize(new_bytes / 8, 0);
    std::memcpy(reinterpret_cast<uint8_t*>(words_.data()) + bytes_, rec, n);
    bytes_ = new_bytes;
  }

  std::vector<uint64_t> words_;  // 8-byte aligned storage, as CUPTI requires
  size_t bytes_ = 0;
};

}  // namespace sp::cupti::testing
