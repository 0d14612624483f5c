// NCCL profiler plugin API v4 (NCCL 2.27): the communicator's identity comes with init, and
// KernelCh events carry the GPU %globaltimer of each channel's start (descriptor) and stop
// (KernelChStop state), the operation's GPU times.
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v4.h"

namespace sp::nccl {
namespace {

api::Result init_v4(void** context, int* mask, const char* comm_name, uint64_t comm_hash,
                    int nnodes, int nranks, int rank, api::DebugLogger) {
  return init_with_comm(4, context, mask, comm_name, comm_hash, nnodes, nranks, rank);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV4 ncclProfiler_v4 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV4>(&sp::nccl::init_v4);
}
