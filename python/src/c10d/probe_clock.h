// The probe clock as the C++ of straggler_probe._c10d reads it: CLOCK_REALTIME ns, what
// runtime/src/capture/clock.h and Python's time.time_ns() read, so that the ends stamped or
// recorded here line up with the starts the Python hooks take.
#pragma once

#include <time.h>

#include <cstdint>

namespace sp::pyext {

inline int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace sp::pyext
