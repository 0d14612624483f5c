// NCCL profiler plugin API v3 (NCCL 2.26: KernelCh events (no timers yet), trafficBytes gone). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v3.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_v2.h"

namespace sp::nccl::api {

struct DescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
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
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};
using StateArgsV3 = StateArgsV1;

using InitV3 = InitV1;
using ProfilerV3 = Profiler<InitV3, DescrV3, StateArgsV3>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV3, coll) == 24);

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v3.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV3 ncclProfiler_v3 __attribute__((visibility("default")));
}
