// C++ side of the runtime for code linked into the same library or statically with sp_probe_core
// (the transport, tests). Everything here works on the one probe instance that the C ABI
// (probe.h) drives. Code in another shared object (the Python extension) should use the C ABI's
// sp_pop_summary instead, so that it talks to the same instance as a preloaded library.
#pragma once

#include <chrono>
#include <functional>

#include "straggler_probe/probe.h"
#include "straggler_probe/step_summary.h"

namespace sp::probe {

enum class PopStatus {
  kOk,        // *out holds the next finished step
  kTimeout,   // none arrived within the timeout
  kDisabled,  // none queued and the probe is not running (never initialised, shut down, failed)
};

// Takes the oldest finished step summary, waiting up to `timeout`. Call from the transport
// thread, never from the training thread. Never throws.
PopStatus pop_summary(StepSummary* out, std::chrono::milliseconds timeout) noexcept;
// Convenience form: true when *out was filled.
inline bool pop_summary(StepSummary* out, std::chrono::milliseconds timeout, PopStatus* status) {
  const PopStatus s = pop_summary(out, timeout);
  if (status != nullptr) *status = s;
  return s == PopStatus::kOk;
}

// Called on the consumer thread for every finished summary, before it is queued for
// pop_summary. It must return quickly (the consumer drains the rings between steps); exceptions
// are caught and logged once. Pass nullptr to remove it. The callback survives sp_shutdown.
using SummaryCallback = std::function<void(const StepSummary&)>;
void set_summary_callback(SummaryCallback callback) noexcept;

}  // namespace sp::probe
