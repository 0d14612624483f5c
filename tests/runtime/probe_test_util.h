// Helpers for tests that drive the runtime through its C ABI, in this process.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "straggler_probe/probe.h"
#include "straggler_probe/runtime.h"
#include "straggler_probe/step_summary.h"

namespace sp::runtime::testing {

// sp_config for a one-rank job, adjusted by `tweak`.
inline sp_config test_config(const std::function<void(sp_config&)>& tweak = {}) {
  sp_config cfg;
  sp_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  cfg.local_rank = 0;
  cfg.drain_interval_ms = 1;
  if (tweak) tweak(cfg);
  return cfg;
}

// Every summary still queued (after sp_shutdown, or after a flush with `wait`).
inline std::vector<StepSummary> pop_all(std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
  std::vector<StepSummary> out;
  StepSummary s;
  while (pop_summary(&s, wait) == PopStatus::kOk) out.push_back(std::move(s));
  return out;
}

inline sp_stats stats() {
  sp_stats s{};
  sp_get_stats(&s);
  return s;
}

inline sp_event make_event(uint64_t start, uint64_t end, uint32_t kind = SP_OP_FORWARD) {
  sp_event e{};
  e.start_ns = start;
  e.end_ns = end;
  e.kind = kind;
  e.microbatch = -1;
  e.peer = -1;
  e.time_source = SP_TIME_CPU;
  return e;
}

// An event starting now (one clock read: argument evaluation order is unspecified).
inline sp_event event_now(uint32_t kind = SP_OP_FORWARD, uint64_t duration_ns = 1) {
  const uint64_t t = sp_now_ns();
  return make_event(t, t + duration_ns, kind);
}

inline const std::string& op_name(const StepSummary& s, const sp_event& op) {
  return s.names.at(op.name_id);
}

}  // namespace sp::runtime::testing
