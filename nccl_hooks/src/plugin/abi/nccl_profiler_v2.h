// NCCL profiler plugin API v2 (NCCL 2.24-2.25: names as strings). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v2.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_v1.h"

namespace sp::nccl::api {

struct DescrV2 {
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
      size_t trafficBytes;
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
  };
};
using StateArgsV2 = StateArgsV1;

using InitV2 = InitV1;
using ProfilerV2 = Profiler<InitV2, DescrV2, StateArgsV2>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV2, coll) == 24);

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v2.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV2 ncclProfiler_v2 __attribute__((visibility("default")));
}
