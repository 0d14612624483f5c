// Builds CUPTI activity buffers byte for byte as CUDA 13 lays them out, for GPU-free tests.
//
// Records are filled through the probe's own prefix declarations (cupti_records.h) and padded to
// the CUDA 13 record sizes. Those declarations are the one description of the layouts: where the
// CUDA headers are available, cupti_layout_check.cpp (compiled into sp_cupti) proves every field
// written here and read by the parser at CUPTI's offset, and every size CUPTI's.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "loader/cupti_records.h"

namespace sp::cupti::testing {

class SyntheticActivityBuffer {
 public:
  SyntheticActivityBuffer& kernel(uint64_t start, uint64_t end, uint32_t correlation,
                                  const char* name, uint32_t stream = 7, uint32_t device = 0,
                                  uint32_t graph_id = 0) {
    auto r = timed<KernelRecord>(kKindConcurrentKernel, start, end, correlation);
    r.name = name;
    r.stream_id = stream;
    r.device_id = device;
    r.graph_id = graph_id;
    r.graph_node_id = graph_id != 0 ? 0x1000u + start : 0;
    r.context_id = 1;
    r.grid[0] = 128;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& memcpy_rec(uint64_t start, uint64_t end, uint32_t correlation,
                                      uint64_t bytes, uint8_t copy_kind = 1) {
    auto r = timed<MemcpyRecord>(kKindMemcpy, start, end, correlation);
    r.copy_kind = copy_kind;
    r.bytes = bytes;
    r.stream_id = 7;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& memset_rec(uint64_t start, uint64_t end, uint32_t correlation,
                                      uint64_t bytes, uint32_t value = 0) {
    auto r = timed<MemsetRecord>(kKindMemset, start, end, correlation);
    r.bytes = bytes;
    r.value = value;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& sync(uint64_t start, uint64_t end, uint32_t correlation, uint32_t type,
                                uint32_t event_id = 0) {
    auto r = timed<SynchronizationRecord>(kKindSynchronization, start, end, correlation);
    r.type = type;
    r.cuda_event_id = event_id;
    r.stream_id = 7;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& cuda_event(uint64_t device_ts, uint32_t correlation, uint32_t event_id) {
    CudaEventRecord r{};
    r.kind = kKindCudaEvent;
    r.correlation_id = correlation;
    r.event_id = event_id;
    r.stream_id = 7;
    r.device_timestamp = device_ts;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& external(uint32_t external_kind, uint64_t id, uint32_t correlation) {
    ExternalCorrelationRecord r{};
    r.kind = kKindExternalCorrelation;
    r.external_kind = external_kind;
    r.external_id = id;
    r.correlation_id = correlation;
    add(r);
    return *this;
  }

  SyntheticActivityBuffer& api(uint32_t kind, uint32_t cbid, uint32_t correlation) {
    auto r = timed<ApiRecord>(kind, 1, 2, correlation);
    r.cbid = cbid;
    add(r);
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
  template <typename R>
  static R timed(uint32_t kind, uint64_t start, uint64_t end, uint32_t correlation) {
    R r{};
    r.kind = kind;
    r.start = start;
    r.end = end;
    r.correlation_id = correlation;
    return r;
  }

  // A record padded to the size CUDA 13 gives its kind.
  template <typename R>
  void add(const R& r) {
    append(&r, sizeof(r), record_size_13(r.kind));
  }

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
