#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {

RuntimeCalls linked_runtime_calls() {
  RuntimeCalls c;
  c.pop_summary = &sp_pop_summary;
  c.now_ns = &sp_now_ns;
  c.set_clock_offset = &sp_set_clock_offset;
  c.get_stats = &sp_get_stats;
  c.get_heartbeat = &sp_get_heartbeat;
  c.set_recording_paused = &sp_set_recording_paused;
  c.get_pause_state = &sp_get_pause_state;
  return c;
}

const char* missing_runtime_call(const RuntimeCalls& calls) {
  if (calls.pop_summary == nullptr) return "sp_pop_summary";
  if (calls.now_ns == nullptr) return "sp_now_ns";
  if (calls.set_clock_offset == nullptr) return "sp_set_clock_offset";
  if (calls.get_stats == nullptr) return "sp_get_stats";
  return "";
}

}  // namespace sp::rank_pipeline
