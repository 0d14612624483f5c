// NCCL profiler plugin API v2 (NCCL 2.24-2.25): names as strings.
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v2.h"

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV2 ncclProfiler_v2 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV2>(&sp::nccl::init_without_comm<2>);
}
