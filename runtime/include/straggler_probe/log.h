// The probe's one log, for every layer that lives inside the training process (runtime/,
// cupti/, nccl_hooks/): a private spdlog logger writing "[straggler_probe] <level>: <message>"
// lines to stderr. It is not registered in spdlog's registry, so a host process that uses spdlog
// itself never sees it, and it is compiled into libstraggler_probe.so (no DT_NEEDED on spdlog or
// fmt). C++ only, never exported: the C ABI reaches the last warning through sp_last_warning.
//
// Level: STRAGGLER_PROBE_LOG_LEVEL (trace, debug, info, warn, error, off; default warn), read at
// the log's first use and again by sp_init. STRAGGLER_PROBE_VERBOSE=1 is an alias of
// STRAGGLER_PROBE_LOG_LEVEL=info kept for the GPU layers' former switch; LOG_LEVEL wins when both
// are set.
//
// Warnings are rate-limited by key: one line per distinct problem, however often it recurs. A
// process that is not a training rank is silenced (set_silent): nothing reaches stderr, warnings
// are still counted and kept as the last warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sp::runtime::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// "trace", "debug", "info", "warn"/"warning", "error", "off" (case-insensitive).
std::optional<Level> parse_level(std::string_view text);
// The level the environment asks for: STRAGGLER_PROBE_LOG_LEVEL when it parses, else
// STRAGGLER_PROBE_VERBOSE=1 as info, else nullopt (the caller's default). Values that do not
// parse are env_config's to report.
std::optional<Level> level_from_env();
void set_level(Level level);
// Text shown in every line after the logger name, e.g. "rank=3".
void set_context(std::string_view context);
// Nothing reaches stderr while silent (processes that are not ranks); warnings are still counted
// and kept.
void set_silent(bool silent);

void debug(std::string_view message);
void info(std::string_view message);
void warn(std::string_view message);
// Logs the warning unless one with the same key was logged before; returns whether it did.
bool warn_once(std::string_view key, std::string_view message);

// For warnings on the recording path: after the first, repeats cost one relaxed load instead of
// warn_once's lock. `message` is only built (called) the first time.
template <class MakeMessage>
void warn_once_fast(std::atomic<bool>& warned, std::string_view key, MakeMessage&& message) {
  if (warned.load(std::memory_order_relaxed)) return;
  warned.store(true, std::memory_order_relaxed);
  warn_once(key, message());
}

// The last warning logged (empty if none), for sp_last_warning and tests.
std::string last_warning();
// A copy of last_warning() that stays valid on this thread until its next call.
const char* last_warning_c_str();
// Warnings logged so far (printed or silenced; tests assert "exactly one").
uint32_t warning_count();
// Forget which keys already warned (tests, a new session).
void reset_warned_keys();
// Tests: forget keys, the last warning and the count.
void reset_for_tests();

}  // namespace sp::runtime::log
