// NCCL profiler plugin API v1 (NCCL 2.23): function and datatype are enum numbers.
// The communicator is identified per event (commHash); operations get CPU times around NCCL's
// enqueue only (GPU times need API v4).
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v1.h"

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV1 ncclProfiler_v1 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV1>(&sp::nccl::init_without_comm<1>);
}
