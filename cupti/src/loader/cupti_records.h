// The few CUPTI activity records we parse, declared here so that the probe builds without the
// CUDA toolkit. Layouts follow CUDA 13.0's cupti_activity.h (CUpti_ActivityKernel10, Memcpy6,
// Memset4, Synchronization2, CudaEvent2, ExternalCorrelation, API). Each struct is the *prefix*
// of the real record that holds the fields we read: CUPTI only ever appends fields in newer
// record versions, so the same prefix reads CUDA 12 records too (Kineto does the same). When the
// real headers are available (SP_HAVE_CUPTI_HEADERS) every offset we rely on is checked against
// them at compile time (cupti_layout_check.cpp).
//
// Records are read with memcpy from the byte buffer, never by casting, so buffer alignment and
// strict aliasing are non-issues.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sp::cupti {

// CUpti_ActivityKind values (stable ABI numbers).
enum ActivityKind : uint32_t {
  kKindInvalid = 0,
  kKindMemcpy = 1,
  kKindMemset = 2,
  kKindKernel = 3,
  kKindDriver = 4,
  kKindRuntime = 5,
  kKindConcurrentKernel = 10,
  kKindOverhead = 17,
  kKindCudaEvent = 36,
  kKindSynchronization = 38,
  kKindExternalCorrelation = 39,
  kKindInternalLaunchApi = 48,
};

// CUpti_ExternalCorrelationKind: PyTorch/Kineto use CUSTOM0 (3) and CUSTOM1 (4); we take CUSTOM2.
constexpr uint32_t kExternalKindCustom0 = 3;
constexpr uint32_t kExternalKindCustom1 = 4;
constexpr uint32_t kExternalKindCustom2 = 5;
constexpr uint32_t kProbeExternalKind = kExternalKindCustom2;

// CUpti_ActivityAttribute values we set.
constexpr uint32_t kAttrZeroedOutActivityBuffer = 5;

// CUpti_ActivityFlag.
constexpr uint32_t kFlushForced = 1u;

// CUptiResult values we distinguish.
constexpr int kCuptiSuccess = 0;
constexpr int kCuptiMaxLimitReached = 12;
constexpr int kCuptiNotInitialized = 15;
constexpr int kCuptiErrorUnknown = 999;

// Driver/runtime callback ids whose API records carry the external correlation of a launch.
// (cupti_driver_cbid.h / cupti_runtime_cbid.h, CUDA 13.0; the numbers never change.)
constexpr uint32_t kDriverLaunchCbids[] = {
    307,  // cuLaunchKernel
    442,  // cuLaunchKernel_ptsz
    477,  // cuLaunchCooperativeKernel
    478,  // cuLaunchCooperativeKernel_ptsz
    514,  // cuGraphLaunch
    652,  // cuLaunchKernelEx (NCCL launches this way)
    653,  // cuLaunchKernelEx_ptsz
    306,  // cuMemcpyAsync
    418,  // cuMemcpyAsync_ptsz
};
constexpr uint32_t kRuntimeLaunchCbids[] = {
    211,  // cudaLaunchKernel_v7000
    214,  // cudaLaunchKernel_ptsz_v7000
    269,  // cudaLaunchCooperativeKernel_v9000
    430,  // cudaLaunchKernelExC_v11060
    431,  // cudaLaunchKernelExC_ptsz_v11060
    505,  // __cudaLaunchKernel_v13000
    506,  // __cudaLaunchKernel_ptsz_v13000
    311,  // cudaGraphLaunch_v10000
    312,  // cudaGraphLaunch_ptsz_v10000
    41,   // cudaMemcpyAsync_v3020
    51,   // cudaMemsetAsync_v3020
};

// --- record prefixes (x86-64 / aarch64 LP64 layout) ---------------------------------------

struct KernelRecord {  // CUpti_ActivityKernel10 prefix (kinds KERNEL, CONCURRENT_KERNEL)
  uint32_t kind;
  uint8_t cache_config;
  uint8_t shared_memory_config;
  uint16_t registers_per_thread;
  uint32_t partitioned_global_cache_requested;
  uint32_t partitioned_global_cache_executed;
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  int32_t grid[3];
  int32_t block[3];
  int32_t static_shared_memory;
  int32_t dynamic_shared_memory;
  uint32_t local_memory_per_thread;
  uint32_t local_memory_total;
  uint32_t correlation_id;
  int64_t grid_id;
  const char* name;
  void* reserved0;
  uint64_t queued;
  uint64_t submitted;
  uint8_t launch_type;
  uint8_t is_shared_memory_carveout_requested;
  uint8_t shared_memory_carveout_requested;
  uint8_t padding;
  uint32_t shared_memory_executed;
  uint64_t graph_node_id;
  uint32_t shmem_limit_config;
  uint32_t graph_id;
};

struct MemcpyRecord {  // CUpti_ActivityMemcpy6 prefix
  uint32_t kind;
  uint8_t copy_kind;
  uint8_t src_kind;
  uint8_t dst_kind;
  uint8_t flags;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t runtime_correlation_id;
  uint32_t pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id;
};

struct MemsetRecord {  // CUpti_ActivityMemset4 prefix
  uint32_t kind;
  uint32_t value;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint16_t flags;
  uint16_t memory_kind;
  uint32_t pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id;
};

struct SynchronizationRecord {  // CUpti_ActivitySynchronization2 prefix (v1 is a prefix of it)
  uint32_t kind;
  uint32_t type;  // CUpti_ActivitySynchronizationType
  uint64_t start;
  uint64_t end;
  uint32_t correlation_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t cuda_event_id;
};

struct CudaEventRecord {  // CUpti_ActivityCudaEvent2 (deviceTimestamp only in v2, CUDA >= 12.8)
  uint32_t kind;
  uint32_t correlation_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t event_id;
  uint32_t pad;
  uint32_t device_id;
  uint32_t pad2;
  void* reserved0;
  uint64_t device_timestamp;
  uint64_t cuda_event_sync_id;
};

struct ExternalCorrelationRecord {  // CUpti_ActivityExternalCorrelation
  uint32_t kind;
  uint32_t external_kind;
  uint64_t external_id;
  uint32_t correlation_id;
  uint32_t reserved;
};

struct ApiRecord {  // CUpti_ActivityAPI (kinds DRIVER, RUNTIME, INTERNAL_LAUNCH_API)
  uint32_t kind;
  uint32_t cbid;
  uint64_t start;
  uint64_t end;
  uint32_t process_id;
  uint32_t thread_id;
  uint32_t correlation_id;
  uint32_t return_value;
};

// Full record sizes as CUPTI 13.0 writes them. Used only by our own record iterator (tests and
// the fallback when cuptiActivityGetNextRecord is unavailable) and by the synthetic-buffer
// builders; production iteration goes through CUPTI itself, which knows its own sizes.
constexpr size_t kKernelRecordSize13 = 216;
constexpr size_t kMemcpyRecordSize13 = 96;
constexpr size_t kMemsetRecordSize13 = 88;
constexpr size_t kSynchronizationRecordSize13 = 56;
constexpr size_t kCudaEventRecordSize13 = 56;
constexpr size_t kExternalCorrelationRecordSize13 = 24;
constexpr size_t kApiRecordSize13 = 40;
constexpr size_t kOverheadRecordSize13 = 56;

static_assert(sizeof(KernelRecord) <= kKernelRecordSize13);
static_assert(sizeof(MemcpyRecord) <= kMemcpyRecordSize13);
static_assert(sizeof(MemsetRecord) <= kMemsetRecordSize13);
static_assert(sizeof(SynchronizationRecord) <= kSynchronizationRecordSize13);
static_assert(sizeof(CudaEventRecord) == kCudaEventRecordSize13);
static_assert(sizeof(ExternalCorrelationRecord) == kExternalCorrelationRecordSize13);
static_assert(sizeof(ApiRecord) == kApiRecordSize13);
static_assert(offsetof(KernelRecord, start) == 16);
static_assert(offsetof(KernelRecord, correlation_id) == 92);
static_assert(offsetof(KernelRecord, name) == 104);
static_assert(offsetof(KernelRecord, graph_id) == 156);

// Size of a CUDA 13 record of `kind`, 0 if we do not know it.
constexpr size_t record_size_13(uint32_t kind) {
  switch (kind) {
    case kKindKernel:
    case kKindConcurrentKernel: return kKernelRecordSize13;
    case kKindMemcpy: return kMemcpyRecordSize13;
    case kKindMemset: return kMemsetRecordSize13;
    case kKindSynchronization: return kSynchronizationRecordSize13;
    case kKindCudaEvent: return kCudaEventRecordSize13;
    case kKindExternalCorrelation: return kExternalCorrelationRecordSize13;
    case kKindDriver:
    case kKindRuntime:
    case kKindInternalLaunchApi: return kApiRecordSize13;
    case kKindOverhead: return kOverheadRecordSize13;
    default: return 0;
  }
}

}  // namespace sp::cupti
