// Training steps from an NVTX range: STRAGGLER_PROBE_STEP_NVTX=<range name>.
//
// libstraggler_probe.so is an NVTX injection library, the way Nsight Systems attaches: NVTX v3
// (header-only, compiled into the application, PyTorch's torch.cuda.nvtx included) loads the
// library named by NVTX_INJECTION64_PATH at the process's first NVTX call and hands it its
// callback tables (nvtx_injection.cpp). The library sets that variable to its own path at load
// time (the one load-time hook here), before the process can make its first NVTX call; when the
// variable already names another tool (Nsight), it is left alone and NVTX steps are unavailable
// (one warning).
//
// A step ends at the end of each outermost range with that name on a thread (push/pop), at each
// end of such a start/end range, and at each NVTX mark with that name. A trailing '*' matches by
// prefix ("train_step*"). The marks go through the same runtime path as the other step sources
// (runtime_mark_step). Precedence, see activation.cpp and preload/README.md: the application's
// own marks (the Python package) > STRAGGLER_PROBE_STEP_NVTX > STRAGGLER_PROBE_STEP_MARKER > the
// period of the NCCL operation sequence.
#pragma once

#include <cstddef>
#include <string>

namespace sp::preload {

struct NvtxStepRange {
  static constexpr size_t kMaxName = 255;
  char name[kMaxName + 1] = {};  // a plain array: lives in constant-initialised global state
  size_t length = 0;             // 0: NVTX steps off
  bool prefix = false;           // the spec ended in '*'
};

// Parses the variable's value (nullptr or empty: off). False with a one-line error naming the
// problem (a lone '*', a name over kMaxName characters).
bool parse_nvtx_step_range(const char* spec, NvtxStepRange* out, std::string* error);

// Whether an NVTX message names the step range (nullptr never does). Cheap: no allocation.
bool nvtx_range_matches(const NvtxStepRange& range, const char* name);
bool nvtx_range_matches(const NvtxStepRange& range, const wchar_t* name);

enum class NvtxStepState {
  kOff,          // variable unset, not a rank, or the library was built without NVTX headers
  kInjected,     // NVTX_INJECTION64_PATH names this library: NVTX ranges mark steps
  kUnavailable,  // asked for, but not possible (another tool, bad value, no headers): warned
};

// What the load-time hook decided (kOff before it ran).
NvtxStepState nvtx_step_state();
// The configured range (valid when the state is kInjected).
const NvtxStepRange& nvtx_step_range();
// Whether this build contains the NVTX injection (the nvtx3 headers were found).
bool nvtx_injection_built();

// Called by the NVTX callbacks (nvtx_injection.cpp); never throw, cheap after the first call.
// A step range opened: activates the GPU-capture layers (the runtime starts with step 0).
void nvtx_step_range_opened() noexcept;
// A step range closed (or a step mark): marks the step unless the application marks its own.
void nvtx_step_range_closed() noexcept;

}  // namespace sp::preload
