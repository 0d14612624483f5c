// The runtime's configuration: explicit sp_config fields win, then STRAGGLER_PROBE_* environment
// variables, then defaults. Every value is range-checked; a bad one is an error naming the
// variable and its value (the probe then stays off rather than guess). runtime/README.md lists
// every variable.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "straggler_probe/log.h"
#include "straggler_probe/probe.h"

namespace sp::runtime {

struct RuntimeConfig {
  bool enabled = true;
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t local_rank = 0;
  uint32_t ring_capacity = 65536;  // events per thread, a power of two
  uint32_t max_threads = 64;
  uint32_t queue_steps = 16;
  uint32_t step_grace_ms = 50;
  uint32_t drain_interval_ms = 5;
  uint32_t max_events_per_step = 1u << 18;
  log::Level log_level = log::Level::kWarn;
};

// Limits, shared with the documentation and the tests.
inline constexpr uint32_t kMinRingCapacity = 64;
inline constexpr uint32_t kMaxRingCapacity = 1u << 24;
inline constexpr uint32_t kMaxThreadsLimit = 1024;  // size of the process-wide thread table
inline constexpr uint32_t kMaxQueueSteps = 4096;
inline constexpr uint32_t kMaxStepGraceMs = 600000;
inline constexpr uint32_t kMaxDrainIntervalMs = 1000;
inline constexpr uint32_t kMinEventsPerStep = 1024;
inline constexpr uint32_t kMaxEventsPerStep = 1u << 24;

// Returns the value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_environment();

struct ConfigResult {
  std::optional<RuntimeConfig> config;  // set on success
  std::string error;                    // one line naming the bad variable or field otherwise
};

// `explicit_cfg` may be null. Fields beyond explicit_cfg->struct_size are treated as unset.
ConfigResult resolve_config(const sp_config* explicit_cfg, const EnvLookup& env);

// Smallest power of two >= value (value <= 2^31).
uint32_t round_up_pow2(uint32_t value);

}  // namespace sp::runtime
