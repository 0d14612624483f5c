// NCCL profiler plugin API v6 (NCCL 2.29+, which asks for ncclProfiler_v6 before v5): v5's
// events plus copy-engine collectives (CeColl, CeSync, CeBatch). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v6.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_v5.h"

namespace sp::nccl::api {

struct DescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    // v6: collectives run by the copy engines (cudaMemcpy batches, no NCCL kernel). CeColl
    // brackets the CPU-side enqueue; CeSync / CeBatch are its parts (not requested).
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
};
// CE events use no recordEventState of their own: v5's state args.
using StateArgsV6 = StateArgsV5;
using InitV6 = InitV5;
using ProfilerV6 = Profiler<InitV6, DescrV6, StateArgsV6>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV6, coll) == 24 && offsetof(DescrV6, kernelCh) == 24);
static_assert(offsetof(DescrV6, ceColl.stream) == 24 + 80 && sizeof(DescrV6) == 24 + 88);

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v6.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV6 ncclProfiler_v6 __attribute__((visibility("default")));
}
