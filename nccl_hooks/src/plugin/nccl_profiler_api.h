// The NCCL profiler plugin interface, versions 1 to 5, declared here (NCCL does not install these
// headers; their layouts are those of NCCL's ext-profiler/example/nccl/profiler_v*.h). The plugin
// is found by NCCL as the symbol ncclProfiler_vN, newest version first:
//   v1 NCCL 2.23   v2 2.24-2.25   v3 2.26   v4 2.27   v5 2.28
// All struct members are plain C types; enums are int-sized (passed as int).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace sp::nccl::api {

using Result = int;  // ncclResult_t
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// ---- v1 (NCCL 2.23): func/datatype/algo/proto are enum numbers -------------------------------
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

// ---- v2 (NCCL 2.24): names as strings ----------------------------------------------------------
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

// ---- v3 (NCCL 2.26): KernelCh events (no timers yet), trafficBytes gone -----------------------
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

// ---- v4 (NCCL 2.27): GPU timers on KernelCh, comm identity in init ------------------------------
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

// ---- v5 (NCCL 2.28): 64-bit type, API events, commId first in init -----------------------------
struct DescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      int graphCaptured;
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

// ---- the function table NCCL finds as ncclProfiler_vN -----------------------------------------
// The same six members in every version; only init's signature and the descriptor / state-args
// types differ.
template <typename InitFn, typename DescrT, typename StateArgsT>
struct Profiler {
  using Init = InitFn;
  using Descr = DescrT;
  using StateArgs = StateArgsT;
  const char* name;
  InitFn init;
  Result (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  Result (*finalize)(void* context);
};
// v1-v3: the communicator is only known from its events.
using InitV1 = Result (*)(void** context, int* eActivationMask);
// v4: the communicator's identity comes with init.
using InitV4 = Result (*)(void** context, int* eActivationMask, const char* commName,
                          uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
// v5: commId first.
using InitV5 = Result (*)(void** context, uint64_t commId, int* eActivationMask,
                          const char* commName, int nNodes, int nranks, int rank,
                          DebugLogger logfn);
using ProfilerV1 = Profiler<InitV1, DescrV1, StateArgsV1>;
using ProfilerV2 = Profiler<InitV1, DescrV2, StateArgsV2>;
using ProfilerV3 = Profiler<InitV1, DescrV3, StateArgsV3>;
using ProfilerV4 = Profiler<InitV4, DescrV4, StateArgsV4>;
using ProfilerV5 = Profiler<InitV5, DescrV5, StateArgsV5>;

// Layout checks (LP64): the offsets NCCL's compiler gives the same declarations.
static_assert(offsetof(DescrV1, coll) == 24 && sizeof(StateArgsV1) == 16);
static_assert(offsetof(DescrV4, kernelCh) == 24 && sizeof(StateArgsV4) == 8);
static_assert(offsetof(DescrV5, coll) == 24 && offsetof(DescrV5, rank) == 16);
static_assert(sizeof(ProfilerV1) == 6 * sizeof(void*) && sizeof(ProfilerV5) == 6 * sizeof(void*));
static_assert(offsetof(ProfilerV4, finalize) == 5 * sizeof(void*));

}  // namespace sp::nccl::api

// The symbols NCCL looks for (defined in nccl_profiler_v1..v5.cpp through
// nccl_profiler_adapter.h).
extern "C" {
extern sp::nccl::api::ProfilerV1 ncclProfiler_v1 __attribute__((visibility("default")));
extern sp::nccl::api::ProfilerV2 ncclProfiler_v2 __attribute__((visibility("default")));
extern sp::nccl::api::ProfilerV3 ncclProfiler_v3 __attribute__((visibility("default")));
extern sp::nccl::api::ProfilerV4 ncclProfiler_v4 __attribute__((visibility("default")));
extern sp::nccl::api::ProfilerV5 ncclProfiler_v5 __attribute__((visibility("default")));
}
