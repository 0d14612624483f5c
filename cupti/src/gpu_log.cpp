#include "straggler_probe/gpu/gpu_log.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sp::gpu {
namespace {

// Function-local statics: nothing runs in a static constructor at library load.
struct LogState {
  std::array<std::atomic<bool>, static_cast<size_t>(WarnOnce::kCount)> printed{};
  std::atomic<uint32_t> count{0};
  std::atomic<bool> silent{false};
  std::mutex last_mutex;
  std::string last;
};

LogState& state() {
  static LogState* s = new LogState();  // leaked on purpose: usable during exit handlers
  return *s;
}

bool verbose() {
  const char* v = std::getenv("STRAGGLER_PROBE_VERBOSE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

bool warn_once(WarnOnce topic, const std::string& message) {
  LogState& s = state();
  const auto idx = static_cast<size_t>(topic);
  if (idx >= s.printed.size() || s.printed[idx].exchange(true)) return false;
  {
    std::lock_guard<std::mutex> lock(s.last_mutex);
    s.last = message;
  }
  s.count.fetch_add(1, std::memory_order_relaxed);
  if (!s.silent.load(std::memory_order_relaxed)) {
    std::fprintf(stderr, "[straggler_probe] warning: %s\n", message.c_str());
  }
  return true;
}

void info(const std::string& message) {
  if (state().silent.load(std::memory_order_relaxed) || !verbose()) return;
  std::fprintf(stderr, "[straggler_probe] %s\n", message.c_str());
}

std::string last_gpu_warning() {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.last_mutex);
  return s.last;
}

uint32_t gpu_warning_count() { return state().count.load(std::memory_order_relaxed); }

void set_gpu_log_silent(bool silent) { state().silent.store(silent, std::memory_order_relaxed); }

void reset_gpu_log_for_tests() {
  LogState& s = state();
  for (auto& p : s.printed) p.store(false);
  s.count.store(0);
  std::lock_guard<std::mutex> lock(s.last_mutex);
  s.last.clear();
}

}  // namespace sp::gpu
