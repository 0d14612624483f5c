// Hand-built step summaries for the op-model tests: events in milliseconds from a fixed t0.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "straggler_probe/probe.h"
#include "straggler_probe/step_summary.h"

namespace sp::online::testing {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'000'000'000'000ULL;

inline sp_event timed_op(uint32_t kind, uint64_t start_ms, uint64_t end_ms, int mb = -1,
                         uint32_t source = SP_TIME_CPU) {
  sp_event e{};
  e.start_ns = kT0 + start_ms * kMs;
  e.end_ns = kT0 + end_ms * kMs;
  e.kind = kind;
  e.microbatch = mb;
  e.peer = -1;
  e.time_source = source;
  return e;
}

inline sp_event all_reduce_op(uint64_t start_ms, uint64_t end_ms, uint64_t group, uint64_t seq,
                              int group_size, uint32_t source = SP_TIME_CPU) {
  sp_event e = timed_op(SP_OP_COLLECTIVE, start_ms, end_ms, -1, source);
  e.coll = SP_COLL_ALL_REDUCE;
  e.group_id = group;
  e.seq = seq;
  e.group_size = group_size;
  e.bytes = 4096;
  return e;
}

// Step 3 of `rank`, starting at t0; end_ms 0 leaves the step end unset.
inline runtime::StepSummary rank_summary(int rank, int world, std::vector<sp_event> ops,
                                       uint64_t end_ms = 0) {
  runtime::StepSummary s;
  s.rank = rank;
  s.world_size = world;
  s.step = 3;
  s.step_start_ns = kT0;
  if (end_ms > 0) s.step_end_ns = kT0 + end_ms * kMs;
  s.ops = std::move(ops);
  s.names = {""};
  return s;
}

// The by-rank view build_step_model and select_sources take (index = rank).
inline std::vector<const runtime::StepSummary*> summary_ptrs(const std::vector<runtime::StepSummary>& ss) {
  std::vector<const runtime::StepSummary*> out;
  for (const auto& s : ss) out.push_back(&s);
  return out;
}

}  // namespace sp::online::testing
