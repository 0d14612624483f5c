// Internal: where each op of the timeline goes (report_timeline.h describes the layout): the
// steps laid end to end, and every drawn (row, copy) as an event on a (pid, stream, lane),
// ordered as the writer emits them.
#pragma once

#include <cstdint>
#include <vector>

#include "straggler_probe/whatif/report_timeline.h"

namespace sp::whatif::detail {

struct TimelineEvent {
  uint32_t row;
  int32_t pid;
  uint8_t stream;
  uint8_t lane;
  int64_t start_ns, end_ns;  // integer nanoseconds: touching ops stay exactly touching
};

struct TimelineProcess {
  int32_t rank, dp_rank, stage;
};

struct TimelineLayout {
  bool with_ideal = false;
  std::vector<TimelineProcess> ranks;  // traced ranks of the drawn steps, ascending
  // Events by (pid, stream), then start, then row: the order they are written in.
  std::vector<TimelineEvent> events;
  // Lanes used per (pid, stream), index pid * kNumTimelineStreams + stream (0: no event).
  std::vector<uint8_t> lanes_used;
};

// Extra lanes of a stream before overlapping ops share the last one.
inline constexpr int kMaxTimelineLanes = 16;

// Throws std::invalid_argument when the input is inconsistent (see TimelineInput).
TimelineLayout lay_out_timeline(const TimelineInput& in);

}  // namespace sp::whatif::detail
