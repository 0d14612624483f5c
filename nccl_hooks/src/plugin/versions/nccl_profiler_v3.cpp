// NCCL profiler plugin API v3 (NCCL 2.26): KernelCh events exist but carry no GPU timer, so they
// are not requested.
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v3.h"

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV3 ncclProfiler_v3 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV3>(&sp::nccl::init_without_comm<3>);
}
