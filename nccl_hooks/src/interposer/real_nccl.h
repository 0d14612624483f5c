// The real NCCL behind the interposer.
//
// libnccl.so.2 defines every ncclX as a weak alias of a strong pncclX (the PMPI-style hook). The
// interposer defines ncclX and calls pncclX, resolved in the libnccl.so.2 already in the process
// (dlopen RTLD_NOLOAD by SONAME, then dlsym). dlsym(RTLD_NEXT) is only a fallback: when libnccl
// sits in an RTLD_LOCAL group (a Python extension's dependency) RTLD_NEXT does not see it.
// Each entry point is resolved once, on first use; a symbol that cannot be found leaves that entry
// returning ncclInternalError with one warning, instead of calling ourselves.
#pragma once

#include "nccl_types.h"

namespace sp::nccl {

struct RealNccl {
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Bcast)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                           cudaStream_t) = nullptr;
  ncclResult_t (*Gather)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  ncclResult_t (*Scatter)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                          cudaStream_t) = nullptr;
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*CommInitRankScalable)(ncclComm_t*, int, int, int, ncclUniqueId*,
                                       ncclConfig_t*) = nullptr;
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) = nullptr;
  ncclResult_t (*CommShrink)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int) = nullptr;
  ncclResult_t (*CommGrow)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*,
                           ncclConfig_t*) = nullptr;  // 2.29+
  ncclResult_t (*PutSignal)(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int,
                            int, unsigned int, ncclComm_t, cudaStream_t) = nullptr;  // 2.29+
  ncclResult_t (*Signal)(int, int, int, unsigned int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*WaitSignal)(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*CommFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommCount)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*CommUserRank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*GetVersion)(int*) = nullptr;
};

// The resolved table (resolution happens on the first call, thread-safe).
const RealNccl& real_nccl();

// Where the table came from, for messages ("libnccl.so.2 (RTLD_NOLOAD)", "RTLD_NEXT", "none").
const char* real_nccl_source();

// Tests: resolve again (after loading a different fake).
void reset_real_nccl_for_tests();

}  // namespace sp::nccl
