// NCCL profiler plugin API v4 (NCCL 2.27: GPU timers on KernelCh, the communicator's identity in init). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v4.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_common.h"

namespace sp::nccl::api {

struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
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
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
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
  };
};
union StateArgsV4 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

using InitV4 = Result (*)(void** context, int* eActivationMask, const char* commName,
                          uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
using ProfilerV4 = Profiler<InitV4, DescrV4, StateArgsV4>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV4, kernelCh) == 24 && sizeof(StateArgsV4) == 8);
static_assert(offsetof(ProfilerV4, finalize) == 5 * sizeof(void*));

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v4.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV4 ncclProfiler_v4 __attribute__((visibility("default")));
}
