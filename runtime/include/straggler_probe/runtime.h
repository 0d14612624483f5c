// C++ convenience over the C ABI's summary hand-off (probe.h: sp_pop_summary,
// sp_set_summary_callback), for the transport and tests. Both go through the exported C
// functions, so they reach the probe instance those resolve to: in a process where
// libstraggler_probe.so is preloaded, that library's, even from code that also links
// sp_runtime_core statically. (Recording calls, sp_record & co, are C functions and resolve the
// same way.)
#pragma once

#include <chrono>
#include <functional>

#include "straggler_probe/probe.h"
#include "straggler_probe/step_summary.h"

namespace sp::runtime {

enum class PopStatus {
  kOk,           // *out holds the next finished step
  kTimeout,      // none arrived within the timeout
  kDisabled,     // none queued and the probe is not running (never initialised, shut down, failed)
  kUndecodable,  // the probe library's bytes could not be decoded (another build?); warned once
};

// Takes the oldest finished step summary, waiting up to `timeout`. Call from the transport
// thread, never from the training thread. Never throws.
PopStatus pop_summary(StepSummary* out, std::chrono::milliseconds timeout) noexcept;

// Called on the consumer thread for every finished summary (decoded), before it is queued for
// pop_summary. It must return quickly; exceptions are caught and logged once. nullptr removes
// it. Replaces any callback set with sp_set_summary_callback.
using SummaryCallback = std::function<void(const StepSummary&)>;
void set_summary_callback(SummaryCallback callback) noexcept;

}  // namespace sp::runtime
