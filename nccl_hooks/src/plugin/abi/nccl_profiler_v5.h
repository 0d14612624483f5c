// NCCL profiler plugin API v5 (NCCL 2.28: 64-bit type, API events, the kernel-launch bracket, commId
// first in init). Layout as NCCL's
// plugins/profiler/example/nccl/profiler_v5.h declares it (LP64).
#pragma once

#include "plugin/abi/nccl_profiler_v4.h"

namespace sp::nccl::api {

struct DescrV5 {
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
  };
};
using StateArgsV5 = StateArgsV4;

using InitV5 = Result (*)(void** context, uint64_t commId, int* eActivationMask,
                          const char* commName, int nNodes, int nranks, int rank,
                          DebugLogger logfn);
using ProfilerV5 = Profiler<InitV5, DescrV5, StateArgsV5>;

// Layout checks: the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV5, coll) == 24 && offsetof(DescrV5, rank) == 16);

}  // namespace sp::nccl::api

// The symbol NCCL looks for (defined in nccl_profiler_v5.cpp through nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV5 ncclProfiler_v5 __attribute__((visibility("default")));
}
