// The probe's own log: a private spdlog logger named "straggler_probe" writing to stderr. It is
// not registered in spdlog's registry, so a host process that uses spdlog itself never sees it.
// Warnings are rate-limited by key: one line per distinct failure, however often it recurs.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

namespace sp::runtime::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// "trace", "debug", "info", "warn"/"warning", "error", "off" (case-insensitive).
std::optional<Level> parse_level(std::string_view text);
void set_level(Level level);
// Text shown in every line after the logger name, e.g. "rank=3".
void set_context(std::string_view context);

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
// Forget which keys already warned (tests, a new session).
void reset_warned_keys();

}  // namespace sp::runtime::log
