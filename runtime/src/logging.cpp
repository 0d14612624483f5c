#include "logging.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cctype>
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
};

// Created on first use and never destroyed: warnings may be logged from a thread that outlives
// static destruction at exit. No work happens at load time.
LogState& state() {
  static LogState* const s = [] {
    auto* st = new LogState();
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    st->logger = std::make_shared<spdlog::logger>("straggler_probe", std::move(sink));
    st->logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [straggler_probe] [%l] %v");
    st->logger->set_level(spdlog::level::warn);
    st->logger->flush_on(spdlog::level::warn);
    return st;
  }();
  return *s;
}

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

void emit(spdlog::level::level_enum level, std::string_view message) {
  LogState& s = state();
  std::string context;
  {
    std::lock_guard lock(s.mutex);
    context = s.context;
  }
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

void set_level(Level level) { state().logger->set_level(to_spdlog(level)); }

void set_context(std::string_view context) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.context = std::string(context);
}

void debug(std::string_view message) { emit(spdlog::level::debug, message); }
void info(std::string_view message) { emit(spdlog::level::info, message); }

void warn(std::string_view message) {
  LogState& s = state();
  {
    std::lock_guard lock(s.mutex);
    s.last_warning = std::string(message);
  }
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

void reset_warned_keys() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.warned_keys.clear();
}

}  // namespace sp::runtime::log
