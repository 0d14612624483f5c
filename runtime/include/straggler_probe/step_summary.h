// The per-step summary one rank sends to rank 0: what the rank did in one training step.
// It is the only thing that crosses ranks; the online analysis (online/) consumes it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "straggler_probe/probe.h"

namespace sp::runtime {

// One operation of the step: an sp_event with its name resolved into the summary's name table.
using OpRecord = sp_event;

struct Annotation {
  int32_t microbatch = -1;
  std::string key;
  std::string value;
};

struct StepSummary {
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t dp_rank = -1;       // data-parallel rank; -1: unknown (analysis treats rank as dp rank)
  int32_t pp_stage = -1;      // pipeline stage; -1: no pipeline (stage 0)
  int64_t step = 0;
  uint64_t step_start_ns = 0; // previous step mark (probe clock)
  uint64_t step_end_ns = 0;   // this step mark
  int64_t clock_offset_ns = 0;   // estimated offset of this rank's clock to rank 0's (add to times)
  uint64_t dropped_events = 0;   // events lost on this rank during the step (ring full)
  // CPU time of the thread that marks steps (the training loop's) over this step: its work, as
  // against its wall time, which also holds what it waited for a core or a device. 0: unknown
  // (marked from another thread than the step before, or an older sender).
  uint64_t step_cpu_ns = 0;
  std::vector<OpRecord> ops;     // in start order
  std::vector<Annotation> annotations;
  std::vector<std::string> names;  // names[name_id] (index 0 is "")
};

// Compact little-endian binary encoding with a magic and version, so that a truncated or foreign
// payload is rejected with a message instead of misread.
// The annotation of a step recorded while paused (sp_set_recording_paused): it has no events.
inline constexpr std::string_view kPausedAnnotation = "straggler_probe.paused";
inline bool recorded_while_paused(const StepSummary& s) {
  for (const Annotation& a : s.annotations) {
    if (a.key == kPausedAnnotation) return true;
  }
  return false;
}

std::string encode_summary(const StepSummary& s);
// Returns false and sets *error (one line) on a malformed payload; never throws.
bool decode_summary(std::string_view bytes, StepSummary* out, std::string* error);

}  // namespace sp::runtime
