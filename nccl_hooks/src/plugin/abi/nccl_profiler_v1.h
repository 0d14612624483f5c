// NCCL profiler plugin API v1 (NCCL 2.23: function and datatype are enum numbers; the communicator is
// identified per event). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v1.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_common.h"

namespace sp::nccl::api {

struct DescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
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
union StateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};

// The communicator is only known from its events.
using InitV1 = Result (*)(void** context, int* eActivationMask);
using ProfilerV1 = Profiler<InitV1, DescrV1, StateArgsV1>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV1, coll) == 24 && sizeof(StateArgsV1) == 16);

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v1.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV1 ncclProfiler_v1 __attribute__((visibility("default")));
}
