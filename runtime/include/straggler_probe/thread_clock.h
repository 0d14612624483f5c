// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what the thread computed, as against
// the wall time it took (waiting for a core it shares, for a device, for a peer). Read by the
// step marks (a rank's CPU work per step), by the analysis's CPU budget and by the benches that
// report CPU per step. Header-only: the runtime, the analysis and the benches each inline it.
#pragma once

#include <time.h>

#include <cstdint>

namespace sp::runtime {

// Nanoseconds; 0 when the clock cannot be read (a caller that keeps differences then sees
// none: unknown, never negative).
inline uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline double thread_cpu_seconds() noexcept { return static_cast<double>(thread_cpu_ns()) * 1e-9; }

}  // namespace sp::runtime
