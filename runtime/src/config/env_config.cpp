#include "env_config.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <string_view>

namespace sp::runtime {
namespace {

// Parses a whole string as a decimal integer in [lo, hi]; sets *error otherwise.
template <class Int>
bool parse_int(const char* name, const std::string& text, Int lo, Int hi, Int* out,
               std::string* error) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < static_cast<int64_t>(lo) ||
      value > static_cast<int64_t>(hi)) {
    *error = fmt::format("{}='{}' is not an integer in [{}, {}]", name, text, lo, hi);
    return false;
  }
  *out = static_cast<Int>(value);
  return true;
}

bool parse_bool(const char* name, const std::string& text, bool* out, std::string* error) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "1" || lower == "true" || lower == "on" || lower == "yes") {
    *out = true;
    return true;
  }
  if (lower == "0" || lower == "false" || lower == "off" || lower == "no") {
    *out = false;
    return true;
  }
  *error = fmt::format("{}='{}' is not 0 or 1 (or true/false, on/off, yes/no)", name, text);
  return false;
}

// One unsigned setting: explicit value (if nonzero), else environment, else the default already
// in *out. Explicit values are range-checked like environment ones.
bool resolve_uint(const char* field, uint32_t explicit_value, const char* var, const EnvLookup& env,
                  uint32_t lo, uint32_t hi, uint32_t* out, std::string* error) {
  if (explicit_value != 0) {
    if (explicit_value < lo || explicit_value > hi) {
      *error = fmt::format("sp_config.{}={} is outside [{}, {}]", field, explicit_value, lo, hi);
      return false;
    }
    *out = explicit_value;
    return true;
  }
  if (auto text = env(var)) return parse_int<uint32_t>(var, *text, lo, hi, out, error);
  return true;
}

// Rank-like settings: explicit value if >= 0, else the launcher's variable, else the default.
bool resolve_rank_field(const char* field, int32_t explicit_value, const char* var,
                        const EnvLookup& env, int32_t lo, int32_t hi, int32_t* out,
                        std::string* error) {
  if (explicit_value >= 0) {
    if (explicit_value < lo || explicit_value > hi) {
      *error = fmt::format("sp_config.{}={} is outside [{}, {}]", field, explicit_value, lo, hi);
      return false;
    }
    *out = explicit_value;
    return true;
  }
  if (auto text = env(var)) return parse_int<int32_t>(var, *text, lo, hi, out, error);
  return true;
}

// Reads a field only if the caller's struct is large enough to contain it.
template <class Field>
Field field_if_present(const sp_config* cfg, Field sp_config::*member, size_t offset) {
  if (cfg == nullptr || cfg->struct_size < offset + sizeof(Field)) return Field{};
  return cfg->*member;
}

}  // namespace

uint32_t round_up_pow2(uint32_t value) {
  uint32_t p = 1;
  while (p < value) p <<= 1;
  return p;
}

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

ConfigResult resolve_config(const sp_config* cfg, const EnvLookup& env) {
  ConfigResult result;
  RuntimeConfig c;
  std::string& err = result.error;
  if (cfg != nullptr && cfg->struct_size < offsetof(sp_config, queue_steps)) {
    err = fmt::format("sp_config.struct_size={} is smaller than the first ABI's {}; call "
                      "sp_config_init first", cfg->struct_size, offsetof(sp_config, queue_steps));
    return result;
  }
  const sp_config none{};
  const sp_config& in = cfg != nullptr ? *cfg : none;
  const bool has_cfg = cfg != nullptr;

  if (auto text = env("STRAGGLER_PROBE_LOG_LEVEL")) {
    auto level = log::parse_level(*text);
    if (!level) {
      err = fmt::format("STRAGGLER_PROBE_LOG_LEVEL='{}' is not one of trace, debug, info, warn, "
                        "error, off", *text);
      return result;
    }
    c.log_level = *level;
  } else if (auto verbose = env("STRAGGLER_PROBE_VERBOSE")) {
    // The GPU layers' former switch, kept as an alias of STRAGGLER_PROBE_LOG_LEVEL=info.
    if (*verbose == "1") {
      c.log_level = log::Level::kInfo;
    } else if (*verbose != "0") {
      err = fmt::format("STRAGGLER_PROBE_VERBOSE='{}' must be 0 or 1 (an alias of "
                        "STRAGGLER_PROBE_LOG_LEVEL=info; prefer that)", *verbose);
      return result;
    }
  }
  if (auto text = env("STRAGGLER_PROBE_ENABLE")) {
    if (!parse_bool("STRAGGLER_PROBE_ENABLE", *text, &c.enabled, &err)) return result;
  }

  if (!resolve_rank_field("world_size", has_cfg ? in.world_size : -1, "WORLD_SIZE", env, 1,
                          1 << 24, &c.world_size, &err) ||
      !resolve_rank_field("rank", has_cfg ? in.rank : -1, "RANK", env, 0, c.world_size - 1,
                          &c.rank, &err) ||
      !resolve_rank_field("local_rank", has_cfg ? in.local_rank : -1, "LOCAL_RANK", env, 0,
                          1 << 24, &c.local_rank, &err)) {
    return result;
  }

  uint32_t ring = c.ring_capacity;
  if (!resolve_uint("ring_capacity", in.ring_capacity, "STRAGGLER_PROBE_RING_CAPACITY", env,
                    kMinRingCapacity, kMaxRingCapacity, &ring, &err) ||
      !resolve_uint("max_threads", in.max_threads, "STRAGGLER_PROBE_MAX_THREADS", env, 1,
                    kMaxThreadsLimit, &c.max_threads, &err) ||
      !resolve_uint("queue_steps",
                    field_if_present(cfg, &sp_config::queue_steps, offsetof(sp_config, queue_steps)),
                    "STRAGGLER_PROBE_QUEUE_STEPS", env, 1, kMaxQueueSteps, &c.queue_steps, &err) ||
      !resolve_uint("drain_interval_ms",
                    field_if_present(cfg, &sp_config::drain_interval_ms,
                                     offsetof(sp_config, drain_interval_ms)),
                    "STRAGGLER_PROBE_DRAIN_INTERVAL_MS", env, 1, kMaxDrainIntervalMs,
                    &c.drain_interval_ms, &err) ||
      !resolve_uint("max_events_per_step",
                    field_if_present(cfg, &sp_config::max_events_per_step,
                                     offsetof(sp_config, max_events_per_step)),
                    "STRAGGLER_PROBE_MAX_EVENTS_PER_STEP", env, kMinEventsPerStep,
                    kMaxEventsPerStep, &c.max_events_per_step, &err)) {
    return result;
  }
  // As for the other fields, sp_config.step_grace_ms == 0 means "unset"; a grace of zero is
  // asked for with STRAGGLER_PROBE_STEP_GRACE_MS=0 (or a 1 ms explicit value).
  const uint32_t grace_field =
      field_if_present(cfg, &sp_config::step_grace_ms, offsetof(sp_config, step_grace_ms));
  if (!resolve_uint("step_grace_ms", grace_field, "STRAGGLER_PROBE_STEP_GRACE_MS", env, 0,
                    kMaxStepGraceMs, &c.step_grace_ms, &err)) {
    return result;
  }
  c.ring_capacity = round_up_pow2(ring);
  result.config = c;
  return result;
}

}  // namespace sp::runtime
