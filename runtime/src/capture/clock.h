// The probe clock: CLOCK_REALTIME in nanoseconds, the base CUPTI uses by default, so that host,
// CUDA-event and CUPTI times land on one axis. Read through the vDSO: no system call.
#pragma once

#include <time.h>

#include <cstdint>

namespace sp::runtime {

inline uint64_t probe_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace sp::runtime
