// NCCL profiler plugin API v6 (NCCL 2.29+): v5's handling, plus collectives that the copy
// engines run (CeColl), which launch no NCCL kernel and so report no channels: they are recorded
// with CPU times around NCCL's enqueue (profiler_plugin_core.cpp).
#include "plugin/versions/nccl_profiler_adapter.h"
#include "plugin/abi/nccl_profiler_v6.h"

namespace sp::nccl {
namespace {

api::Result init_v6(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                    int nnodes, int nranks, int rank, api::DebugLogger) {
  return init_with_comm(6, context, mask, comm_name, comm_id, nnodes, nranks, rank);
}

}  // namespace
}  // namespace sp::nccl

extern "C" {
__attribute__((visibility("default"))) constinit sp::nccl::api::ProfilerV6 ncclProfiler_v6 =
    sp::nccl::make_profiler<sp::nccl::api::ProfilerV6>(&sp::nccl::init_v6);
}
