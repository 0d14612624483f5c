// The C++ summary API (runtime.h), built on the exported C functions only: whichever probe
// instance those resolve to (a preloaded libstraggler_probe.so wins over a static copy), this
// talks to the same one. The price is one decode per summary, microseconds per step.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include "straggler_probe/log.h"
#include "straggler_probe/runtime.h"

namespace sp::runtime {
namespace {

struct CxxCallback {
  std::mutex mutex;
  SummaryCallback fn;
};
CxxCallback& cxx_callback() {
  static CxxCallback* const holder = new CxxCallback();  // never destroyed: the consumer may call
  return *holder;
}

void warn_undecodable(const std::string& error) {
  log::warn_once("summary_undecodable",
                 fmt::format("cannot decode a summary from the probe library ({}); is "
                             "libstraggler_probe.so from another build than this code?", error));
}

// Runs on the consumer thread of whichever instance holds the callback.
void decode_and_call(const void* data, size_t size, void* /*user*/) {
  try {
    SummaryCallback fn;
    {
      CxxCallback& h = cxx_callback();
      std::lock_guard lock(h.mutex);
      fn = h.fn;
    }
    if (!fn) return;
    StepSummary s;
    std::string error;
    if (!decode_summary(std::string_view(static_cast<const char*>(data), size), &s, &error)) {
      warn_undecodable(error);
      return;
    }
    fn(s);
  } catch (const std::exception& e) {
    log::warn_once("summary_callback",
                   fmt::format("the summary callback threw ({}); it is still called for later "
                               "steps", e.what()));
  } catch (...) {
    log::warn_once("summary_callback",
                   "the summary callback threw; it is still called for later steps");
  }
}

}  // namespace

PopStatus pop_summary(StepSummary* out, std::chrono::milliseconds timeout) noexcept {
  try {
    if (out == nullptr) return PopStatus::kDisabled;
    thread_local std::string buf(64 * 1024, '\0');
    auto wait_ms = static_cast<int32_t>(std::min<int64_t>(timeout.count(), INT32_MAX));
    for (;;) {
      size_t size = 0;
      const int rc = sp_pop_summary(buf.data(), buf.size(), &size, wait_ms < 0 ? 0 : wait_ms);
      if (rc == SP_ERR_INVALID && size > buf.size()) {
        buf.resize(size);  // the next summary is larger than any before: grow and take it
        wait_ms = 0;
        continue;
      }
      if (rc == SP_ERR_TIMEOUT) return PopStatus::kTimeout;
      if (rc != SP_OK) return PopStatus::kDisabled;
      std::string error;
      if (!decode_summary(std::string_view(buf.data(), size), out, &error)) {
        warn_undecodable(error);
        return PopStatus::kUndecodable;
      }
      return PopStatus::kOk;
    }
  } catch (...) {
    return PopStatus::kDisabled;  // buffer growth failed: nothing was taken from the queue
  }
}

void set_summary_callback(SummaryCallback callback) noexcept {
  try {
    const bool set = static_cast<bool>(callback);
    {
      CxxCallback& h = cxx_callback();
      std::lock_guard lock(h.mutex);
      h.fn = std::move(callback);
    }
    sp_set_summary_callback(set ? &decode_and_call : nullptr, nullptr);
  } catch (...) {
    log::warn_once("summary_callback_set", "set_summary_callback failed; no callback is set");
  }
}

}  // namespace sp::runtime
