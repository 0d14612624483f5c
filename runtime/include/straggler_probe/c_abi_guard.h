// The one guard of every exported C entry point (runtime/src/api/c_api.cpp, cupti's and nccl_hooks'
// C APIs): no exception crosses the C ABI. An exception from inside becomes the entry point's
// error value, one warning naming the entry point, and the probe stepping aside (training goes
// on without it). C++ only, not part of the C ABI.
#pragma once

#include <exception>

#include "straggler_probe/log.h"

namespace sp::runtime {

// Defined in the runtime core (lifecycle.cpp). Referenced weakly here so that the GPU layers'
// C entry points also link into their unit tests without the core; there an exception only
// warns.
void step_aside(const char* where, const char* what) noexcept __attribute__((weak));

inline void fail_at_c_abi(const char* where, const char* what) noexcept {
  if (&step_aside != nullptr) {
    step_aside(where, what);
    return;
  }
  try {
    log::warn_once(where, std::string("internal error in ") + where + ": " + what);
  } catch (...) {
    // Logging failed too: nothing else is left to do.
  }
}

// Runs `body`; any exception makes the probe step aside and returns `on_error`.
template <class R, class F>
R guarded(const char* where, R on_error, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    fail_at_c_abi(where, e.what());
  } catch (...) {
    fail_at_c_abi(where, "unknown exception");
  }
  return on_error;
}

// For entry points that return nothing.
template <class F>
void guarded_void(const char* where, F&& body) noexcept {
  guarded(where, 0, [&] {
    body();
    return 0;
  });
}

}  // namespace sp::runtime
