// NCCL profiler plugin API v5 (NCCL 2.28): 64-bit event types, API-level events, and the
// KernelLaunch event that brackets NCCL's cuLaunchKernelEx on the launching thread, where the
// probe pushes a CUPTI external correlation id so that CUPTI's record of the NCCL kernel is
// tagged (profiler_plugin_core.cpp). Collective/p2p/KernelCh handling is v4's.
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v5.h"

namespace sp::nccl {
namespace {

api::Result init_v5(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                    int nnodes, int nranks, int rank, api::DebugLogger) {
  return init_with_comm(5, context, mask, comm_name, comm_id, nnodes, nranks, rank);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV5 ncclProfiler_v5 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV5>(&sp::nccl::init_v5);
}
