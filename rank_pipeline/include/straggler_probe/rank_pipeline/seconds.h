// The user's settings are in seconds (docs/CONFIG.md); the pipeline's timers count milliseconds.
// One conversion, usable in default member initializers (constexpr), truncating as the
// Python binding always has.
#pragma once

#include <chrono>
#include <cstdint>

namespace sp::rank_pipeline {

constexpr std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1e3));
}

}  // namespace sp::rank_pipeline
