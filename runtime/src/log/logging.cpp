// The probe's one log (straggler_probe/log.h): the runtime's and the GPU layers' (cupti/,
// nccl_hooks/) lines, warnings and last warning all go through here.
#include "straggler_probe/log.h"

#include "straggler_probe/output_line.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace sp::runtime::log {
namespace {

// Bound on remembered warning keys: a caller producing endless distinct keys must not grow us.
constexpr size_t kMaxWarnedKeys = 1024;

struct LogState {
  std::mutex mutex;
  std::shared_ptr<spdlog::logger> logger;
  std::unordered_set<std::string> warned_keys;
  std::string last_warning;
  std::string context;
  std::atomic<bool> silent{false};
  std::atomic<uint32_t> warnings{0};
};

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::kTrace: return spdlog::level::trace;
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// Created on first use and never destroyed: warnings may be logged from a thread that outlives
// static destruction at exit. No work happens at load time.
LogState& state() {
  static LogState* const s = [] {
    auto* st = new LogState();
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    st->logger = std::make_shared<spdlog::logger>("straggler_probe", std::move(sink));
    // "[straggler_probe] warning: ..." is what users and the tests grep for.
    st->logger->set_pattern("[straggler_probe] %l: %v");
    st->logger->set_level(to_spdlog(level_from_env().value_or(Level::kWarn)));
    st->logger->flush_on(spdlog::level::warn);
    return st;
  }();
  return *s;
}

void emit(spdlog::level::level_enum level, std::string_view message) {
  LogState& s = state();
  if (s.silent.load(std::memory_order_relaxed) || !s.logger->should_log(level)) return;
  std::string context;
  {
    std::lock_guard lock(s.mutex);
    context = s.context;
  }
  // Under the output lock: a warning and rank 0's lines (output_line.h) never interleave.
  std::lock_guard out(output_lock());
  if (context.empty()) {
    s.logger->log(level, "{}", message);
  } else {
    s.logger->log(level, "{} {}", context, message);
  }
}

}  // namespace

std::optional<Level> parse_level(std::string_view text) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "trace") return Level::kTrace;
  if (lower == "debug") return Level::kDebug;
  if (lower == "info") return Level::kInfo;
  if (lower == "warn" || lower == "warning") return Level::kWarn;
  if (lower == "error") return Level::kError;
  if (lower == "off") return Level::kOff;
  return std::nullopt;
}

std::optional<Level> level_from_env() {
  if (const char* text = std::getenv("STRAGGLER_PROBE_LOG_LEVEL"); text != nullptr && *text != '\0') {
    return parse_level(text);
  }
  if (const char* verbose = std::getenv("STRAGGLER_PROBE_VERBOSE");
      verbose != nullptr && std::strcmp(verbose, "1") == 0) {
    return Level::kInfo;
  }
  return std::nullopt;
}

void set_level(Level level) { state().logger->set_level(to_spdlog(level)); }

void set_context(std::string_view context) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.context = std::string(context);
}

void set_silent(bool silent) { state().silent.store(silent, std::memory_order_relaxed); }

void debug(std::string_view message) { emit(spdlog::level::debug, message); }
void info(std::string_view message) { emit(spdlog::level::info, message); }

void warn(std::string_view message) {
  LogState& s = state();
  {
    std::lock_guard lock(s.mutex);
    s.last_warning = std::string(message);
  }
  s.warnings.fetch_add(1, std::memory_order_relaxed);
  emit(spdlog::level::warn, message);
}

bool warn_once(std::string_view key, std::string_view message) {
  LogState& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.warned_keys.count(std::string(key)) != 0) return false;
    if (s.warned_keys.size() >= kMaxWarnedKeys) return false;
    s.warned_keys.emplace(key);
  }
  warn(message);
  return true;
}

std::string last_warning() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  return s.last_warning;
}

const char* last_warning_c_str() {
  // Per-thread copy: the caller gets a pointer nobody else rewrites under it.
  thread_local std::string copy;
  copy = last_warning();
  return copy.c_str();
}

uint32_t warning_count() { return state().warnings.load(std::memory_order_relaxed); }

void reset_warned_keys() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.warned_keys.clear();
}

void reset_for_tests() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.warned_keys.clear();
  s.last_warning.clear();
  s.warnings.store(0, std::memory_order_relaxed);
}

}  // namespace sp::runtime::log
