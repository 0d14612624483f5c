#include "straggler_probe/preload/nvtx_steps.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "python_presence.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/capture_hooks.h"
#include "straggler_probe/log.h"
#include "straggler_probe/preload/activation.h"
#include "straggler_probe/preload/own_step_marks.h"
#include "straggler_probe/preload/rank_env.h"

namespace sp::preload {

namespace log = runtime::log;
namespace {

constexpr const char* kVar = "STRAGGLER_PROBE_STEP_NVTX";
constexpr const char* kInjectionVar = "NVTX_INJECTION64_PATH";

// Constant-initialised: nothing runs before the load-time hook fills it.
constinit NvtxStepRange g_range{};
constinit std::atomic<NvtxStepState> g_state{NvtxStepState::kOff};

// Marking: one step range closes at a time (ranges of several threads end in one order).
constinit std::mutex g_mark_mutex{};
constinit OwnStepMarks g_own_marks{};

std::string own_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_path), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  // LD_PRELOAD may name the library relatively; NVTX dlopens the path from wherever it runs.
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return {};
  return resolved;
}

bool same_file(const char* a, const std::string& b) {
  struct stat sa{}, sb{};
  if (stat(a, &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool ascii_matches(const NvtxStepRange& range, size_t name_length, char (*at)(const void*, size_t),
                   const void* name) {
  if (range.prefix ? name_length < range.length : name_length != range.length) return false;
  for (size_t i = 0; i < range.length; ++i) {
    if (at(name, i) != range.name[i]) return false;
  }
  return true;
}

void warn_unavailable(const std::string& why) {
  log::warn_once("nvtx_steps",
                 std::string(kVar) + ": " + why +
                     "; steps come from STRAGGLER_PROBE_STEP_MARKER (default auto) instead");
  g_state.store(NvtxStepState::kUnavailable, std::memory_order_release);
}

// The decision, made once at library load (and again in a process NVTX itself loaded us into).
void decide() {
  const char* spec = std::getenv(kVar);
  if (spec == nullptr || *spec == '\0') return;
  // Silent outside training ranks (the torchrun agent, tools that inherited LD_PRELOAD).
  if (!read_rank_env().is_rank) return;
  NvtxStepRange range;
  std::string error;
  if (!parse_nvtx_step_range(spec, &range, &error)) {
    warn_unavailable(error);
    return;
  }
  if (!nvtx_injection_built()) {
    warn_unavailable("this libstraggler_probe.so was built without the NVTX headers (nvtx3 of "
                     "the CUDA toolkit), so NVTX ranges cannot mark steps");
    return;
  }
  // Loaded by the package's _core into a running interpreter: the package marks the steps
  // itself (it wins over NVTX anyway), and setenv would race with other threads' getenv.
  if (python_interpreter_running()) {
    warn_unavailable("the straggler_probe package marks the steps in this Python process "
                     "(loaded after the interpreter started, not preloaded)");
    return;
  }
  const std::string self = own_path();
  if (self.empty()) {
    warn_unavailable("cannot find the path of libstraggler_probe.so to register it with NVTX");
    return;
  }
  const char* current = std::getenv(kInjectionVar);
  if (current != nullptr && *current != '\0' && !same_file(current, self)) {
    warn_unavailable(std::string(kInjectionVar) + "=" + current +
                     " already names another NVTX tool (Nsight Systems?); it is left alone and "
                     "NVTX step ranges are unavailable in this run");
    return;
  }
  if (current == nullptr || *current == '\0') {
    // NVTX reads the variable at the process's first NVTX call, which comes after this hook.
    if (setenv(kInjectionVar, self.c_str(), 1) != 0) {
      warn_unavailable(std::string("cannot set ") + kInjectionVar);
      return;
    }
  }
  g_range = range;
  g_state.store(NvtxStepState::kInjected, std::memory_order_release);
}

// The one load-time hook of this file (declared in preload/CMakeLists.txt): environment
// reads, one setenv, at most one warning. No threads, no CUDA.
__attribute__((constructor)) void straggler_probe_nvtx_setup() {
  try {
    decide();
  } catch (...) {
    // Allocation failure at load: NVTX steps stay off, the process goes on.
  }
}

}  // namespace

bool parse_nvtx_step_range(const char* spec, NvtxStepRange* out, std::string* error) {
  NvtxStepRange r;
  if (spec == nullptr || *spec == '\0') {
    *out = r;
    return true;
  }
  size_t n = std::strlen(spec);
  if (spec[n - 1] == '*') {
    r.prefix = true;
    --n;
  }
  if (n == 0) {
    *error = std::string(kVar) + "='" + spec +
             "': needs a range name (a trailing '*' matches names starting with it)";
    return false;
  }
  if (n > NvtxStepRange::kMaxName) {
    *error = std::string(kVar) + ": the range name is longer than " +
             std::to_string(NvtxStepRange::kMaxName) + " characters";
    return false;
  }
  std::memcpy(r.name, spec, n);
  r.name[n] = '\0';
  r.length = n;
  *out = r;
  return true;
}

bool nvtx_range_matches(const NvtxStepRange& range, const char* name) {
  if (name == nullptr || range.length == 0) return false;
  const size_t len = range.prefix ? strnlen(name, range.length) : std::strlen(name);
  return ascii_matches(
      range, len, [](const void* p, size_t i) { return static_cast<const char*>(p)[i]; }, name);
}

bool nvtx_range_matches(const NvtxStepRange& range, const wchar_t* name) {
  if (name == nullptr || range.length == 0) return false;
  size_t len = 0;
  const size_t limit = range.prefix ? range.length : SIZE_MAX;
  while (len < limit && name[len] != L'\0') ++len;
  return ascii_matches(
      range, len,
      [](const void* p, size_t i) {
        const wchar_t c = static_cast<const wchar_t*>(p)[i];
        // Only ASCII can equal the (ASCII) configured name; anything else never matches.
        return c > 0 && c < 128 ? static_cast<char>(c) : '\0';
      },
      name);
}

NvtxStepState nvtx_step_state() { return g_state.load(std::memory_order_acquire); }

const NvtxStepRange& nvtx_step_range() { return g_range; }

bool nvtx_injection_built() {
#if defined(SP_HAVE_NVTX_INJECTION)
  return true;
#else
  return false;
#endif
}

void nvtx_step_range_opened() noexcept {
  try {
    activate();  // idempotent; the first step range starts the runtime (step 0)
  } catch (...) {
  }
}

void nvtx_step_range_closed() noexcept {
  try {
    activate();  // a step mark may come before any range was opened
    if (!recording_allowed()) return;  // not a rank, or a forked child
    std::lock_guard<std::mutex> lock(g_mark_mutex);
    const int64_t label = gpu::current_step_label();
    bool stood_down_now = false;
    if (!g_own_marks.sole_producer(label, &stood_down_now)) {
      if (stood_down_now) {
        log::warn_once("nvtx_steps_stood_down",
                       std::string(kVar) +
                           " is ignored: the application marks the steps itself (the "
                           "straggler_probe package or sp_mark_step); its marks win");
      }
      return;
    }
    if (label < 0) return;  // no runtime in this image
    g_own_marks.mark(label);
    gpu::capture_request_flush();  // step end: GPU records off the hot path
  } catch (...) {
  }
}

}  // namespace sp::preload
