// What every version of NCCL's profiler plugin interface shares: the result type, the logger
// NCCL passes to init, the event type bits, the states we act on, and the shape of the function
// table NCCL finds as ncclProfiler_vN. NCCL does not install its plugin headers; each version's
// layout is declared in its own header here (nccl_profiler_v1.h .. v6.h), as NCCL's own
// plugins/profiler/example/nccl/profiler_v*.h do. nccl_profiler_api.h includes them all.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace sp::nccl {

// ncclProfile* event type bits (one set for all versions; each version adds its own).
enum ProfilerEventType : uint64_t {
  kProfileGroup = 1u << 0,
  kProfileColl = 1u << 1,
  kProfileP2p = 1u << 2,
  kProfileProxyOp = 1u << 3,
  kProfileProxyStep = 1u << 4,
  kProfileProxyCtrl = 1u << 5,
  kProfileKernelCh = 1u << 6,       // v3 (timers from v4)
  kProfileNetPlugin = 1u << 7,
  kProfileGroupApi = 1u << 8,       // v5
  kProfileCollApi = 1u << 9,        // v5
  kProfileP2pApi = 1u << 10,        // v5
  kProfileKernelLaunch = 1u << 11,  // v5
  kProfileCeColl = 1u << 12,        // v6: a collective run by the copy engines (no kernel)
  kProfileCeSync = 1u << 13,        // v6
  kProfileCeBatch = 1u << 14,       // v6
};

// ncclProfilerEventState values we act on.
constexpr int kStateKernelChStop = 22;  // v4+: args carry the channel's stop %globaltimer

namespace api {

using Result = int;  // ncclResult_t
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// The function table NCCL finds as ncclProfiler_vN: the same six members in every version; only
// init's signature and the descriptor / state-args types differ. All members are plain C types;
// enums are int-sized (passed as int).
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
static_assert(sizeof(Profiler<void*, int, int>) == 6 * sizeof(void*));

}  // namespace api
}  // namespace sp::nccl
