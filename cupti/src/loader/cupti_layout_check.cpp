// Compile-time proof that our record declarations (cupti_records.h) match the CUPTI headers of
// the toolkit we build against: every field the parser reads or the tests' synthetic buffers
// write (tests/cupti/synthetic_activity_buffer.h), and every record size. Compiled only when
// SP_HAVE_CUPTI_HEADERS is defined; without the toolkit the declarations stand on their own
// (they were checked against CUDA 13.0).
#ifdef SP_HAVE_CUPTI_HEADERS
#include <cupti.h>

#include <cstddef>

#include "cupti_records.h"

namespace sp::cupti {

#define SP_SAME_OFFSET(ours, field, theirs, tfield) \
  static_assert(offsetof(ours, field) == offsetof(theirs, tfield), #ours "." #field)

SP_SAME_OFFSET(KernelRecord, start, CUpti_ActivityKernel10, start);
SP_SAME_OFFSET(KernelRecord, end, CUpti_ActivityKernel10, end);
SP_SAME_OFFSET(KernelRecord, device_id, CUpti_ActivityKernel10, deviceId);
SP_SAME_OFFSET(KernelRecord, context_id, CUpti_ActivityKernel10, contextId);
SP_SAME_OFFSET(KernelRecord, stream_id, CUpti_ActivityKernel10, streamId);
SP_SAME_OFFSET(KernelRecord, grid, CUpti_ActivityKernel10, gridX);
SP_SAME_OFFSET(KernelRecord, block, CUpti_ActivityKernel10, blockX);
SP_SAME_OFFSET(KernelRecord, correlation_id, CUpti_ActivityKernel10, correlationId);
SP_SAME_OFFSET(KernelRecord, grid_id, CUpti_ActivityKernel10, gridId);
SP_SAME_OFFSET(KernelRecord, name, CUpti_ActivityKernel10, name);
SP_SAME_OFFSET(KernelRecord, graph_node_id, CUpti_ActivityKernel10, graphNodeId);
SP_SAME_OFFSET(KernelRecord, graph_id, CUpti_ActivityKernel10, graphId);
static_assert(kKernelRecordSize13 == sizeof(CUpti_ActivityKernel10));

SP_SAME_OFFSET(MemcpyRecord, copy_kind, CUpti_ActivityMemcpy6, copyKind);
SP_SAME_OFFSET(MemcpyRecord, bytes, CUpti_ActivityMemcpy6, bytes);
SP_SAME_OFFSET(MemcpyRecord, start, CUpti_ActivityMemcpy6, start);
SP_SAME_OFFSET(MemcpyRecord, end, CUpti_ActivityMemcpy6, end);
SP_SAME_OFFSET(MemcpyRecord, device_id, CUpti_ActivityMemcpy6, deviceId);
SP_SAME_OFFSET(MemcpyRecord, context_id, CUpti_ActivityMemcpy6, contextId);
SP_SAME_OFFSET(MemcpyRecord, stream_id, CUpti_ActivityMemcpy6, streamId);
SP_SAME_OFFSET(MemcpyRecord, correlation_id, CUpti_ActivityMemcpy6, correlationId);
SP_SAME_OFFSET(MemcpyRecord, graph_id, CUpti_ActivityMemcpy6, graphId);
static_assert(kMemcpyRecordSize13 == sizeof(CUpti_ActivityMemcpy6));

SP_SAME_OFFSET(MemsetRecord, bytes, CUpti_ActivityMemset4, bytes);
SP_SAME_OFFSET(MemsetRecord, start, CUpti_ActivityMemset4, start);
SP_SAME_OFFSET(MemsetRecord, end, CUpti_ActivityMemset4, end);
SP_SAME_OFFSET(MemsetRecord, device_id, CUpti_ActivityMemset4, deviceId);
SP_SAME_OFFSET(MemsetRecord, context_id, CUpti_ActivityMemset4, contextId);
SP_SAME_OFFSET(MemsetRecord, stream_id, CUpti_ActivityMemset4, streamId);
SP_SAME_OFFSET(MemsetRecord, correlation_id, CUpti_ActivityMemset4, correlationId);
SP_SAME_OFFSET(MemsetRecord, graph_id, CUpti_ActivityMemset4, graphId);
static_assert(kMemsetRecordSize13 == sizeof(CUpti_ActivityMemset4));

SP_SAME_OFFSET(SynchronizationRecord, type, CUpti_ActivitySynchronization2, type);
SP_SAME_OFFSET(SynchronizationRecord, start, CUpti_ActivitySynchronization2, start);
SP_SAME_OFFSET(SynchronizationRecord, end, CUpti_ActivitySynchronization2, end);
SP_SAME_OFFSET(SynchronizationRecord, correlation_id, CUpti_ActivitySynchronization2, correlationId);
SP_SAME_OFFSET(SynchronizationRecord, context_id, CUpti_ActivitySynchronization2, contextId);
SP_SAME_OFFSET(SynchronizationRecord, stream_id, CUpti_ActivitySynchronization2, streamId);
SP_SAME_OFFSET(SynchronizationRecord, cuda_event_id, CUpti_ActivitySynchronization2, cudaEventId);
static_assert(kSynchronizationRecordSize13 == sizeof(CUpti_ActivitySynchronization2));

SP_SAME_OFFSET(CudaEventRecord, correlation_id, CUpti_ActivityCudaEvent2, correlationId);
SP_SAME_OFFSET(CudaEventRecord, context_id, CUpti_ActivityCudaEvent2, contextId);
SP_SAME_OFFSET(CudaEventRecord, stream_id, CUpti_ActivityCudaEvent2, streamId);
SP_SAME_OFFSET(CudaEventRecord, event_id, CUpti_ActivityCudaEvent2, eventId);
SP_SAME_OFFSET(CudaEventRecord, device_id, CUpti_ActivityCudaEvent2, deviceId);
SP_SAME_OFFSET(CudaEventRecord, device_timestamp, CUpti_ActivityCudaEvent2, deviceTimestamp);
static_assert(kCudaEventRecordSize13 == sizeof(CUpti_ActivityCudaEvent2));

SP_SAME_OFFSET(ExternalCorrelationRecord, external_kind, CUpti_ActivityExternalCorrelation,
               externalKind);
SP_SAME_OFFSET(ExternalCorrelationRecord, external_id, CUpti_ActivityExternalCorrelation,
               externalId);
SP_SAME_OFFSET(ExternalCorrelationRecord, correlation_id, CUpti_ActivityExternalCorrelation,
               correlationId);
static_assert(kExternalCorrelationRecordSize13 == sizeof(CUpti_ActivityExternalCorrelation));

SP_SAME_OFFSET(ApiRecord, cbid, CUpti_ActivityAPI, cbid);
SP_SAME_OFFSET(ApiRecord, start, CUpti_ActivityAPI, start);
SP_SAME_OFFSET(ApiRecord, correlation_id, CUpti_ActivityAPI, correlationId);
static_assert(kApiRecordSize13 == sizeof(CUpti_ActivityAPI));
static_assert(kOverheadRecordSize13 == sizeof(CUpti_ActivityOverhead3));

static_assert(static_cast<int>(kKindConcurrentKernel) == static_cast<int>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
static_assert(static_cast<int>(kKindMemcpy) == static_cast<int>(CUPTI_ACTIVITY_KIND_MEMCPY));
static_assert(static_cast<int>(kKindMemset) == static_cast<int>(CUPTI_ACTIVITY_KIND_MEMSET));
static_assert(static_cast<int>(kKindSynchronization) == static_cast<int>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
static_assert(static_cast<int>(kKindCudaEvent) == static_cast<int>(CUPTI_ACTIVITY_KIND_CUDA_EVENT));
static_assert(static_cast<int>(kKindExternalCorrelation) == static_cast<int>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
static_assert(static_cast<int>(kKindDriver) == static_cast<int>(CUPTI_ACTIVITY_KIND_DRIVER));
static_assert(static_cast<int>(kKindRuntime) == static_cast<int>(CUPTI_ACTIVITY_KIND_RUNTIME));
static_assert(static_cast<int>(kKindOverhead) == static_cast<int>(CUPTI_ACTIVITY_KIND_OVERHEAD));
static_assert(kExternalKindCustom2 == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
static_assert(kAttrZeroedOutActivityBuffer == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER);
static_assert(kFlushForced == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
static_assert(kCuptiMaxLimitReached == CUPTI_ERROR_MAX_LIMIT_REACHED);
static_assert(kCuptiErrorUnknown == CUPTI_ERROR_UNKNOWN);
static_assert(kDriverLaunchCbids[0] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
static_assert(kDriverLaunchCbids[5] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
static_assert(kRuntimeLaunchCbids[0] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
static_assert(kRuntimeLaunchCbids[5] == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);

#undef SP_SAME_OFFSET

}  // namespace sp::cupti
#endif  // SP_HAVE_CUPTI_HEADERS
