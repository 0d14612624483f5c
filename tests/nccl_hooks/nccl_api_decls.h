// The NCCL entry points as a test program sees them (ABI of nccl.h: enums as int, handles as
// pointers), so the test programs need no NCCL headers.
#pragma once

#include <cstddef>

#include "fake_nccl.h"

extern "C" {
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    void* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           void* config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclAllReduce(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclBroadcast(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclBcast(void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclReduce(const void*, void*, size_t, int, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclAllGather(const void*, void*, size_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclReduceScatter(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclAlltoAll(const void*, void*, size_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclGather(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclScatter(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclSend(const void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclRecv(void*, size_t, int, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
// NCCL 2.29
struct WaitSignalDesc {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
};
ncclResult_t ncclPutSignal(const void*, size_t, int, int, void* win, size_t, int, int, unsigned,
                           ncclComm_t, cudaStream_t);
ncclResult_t ncclSignal(int, int, int, unsigned, ncclComm_t, cudaStream_t);
ncclResult_t ncclWaitSignal(int, WaitSignalDesc*, ncclComm_t, cudaStream_t);
ncclResult_t ncclCommGrow(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, void*);
}

constexpr int kFloat32 = 7;
constexpr int kBfloat16 = 9;
constexpr int kInt64 = 4;
constexpr int kSum = 0;
