// The real and the simulated ideal timeline as one Chrome/Perfetto trace (JSON object format).
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

struct TimelineInput {
  const TraceTable* trace = nullptr;
  const JobMeta* meta = nullptr;
  // The real start and end of every trace row (same row order, seconds). Empty: taken from the
  // trace (start_ts, start_ts + duration). The analysis gives them relative to each step's
  // start, on the same clock as its ideal times.
  std::span<const double> real_start;
  std::span<const double> real_end;
  // The simulated straggler-free start and end of every row, on the same clock as the real
  // times. Empty: only the real timeline is written. Rows with NaN ideal times are left out.
  std::span<const double> ideal_start;
  std::span<const double> ideal_end;
  // Steps to draw, in any order; empty means every step of the trace.
  std::vector<int64_t> steps;
};

// Layout (open in ui.perfetto.dev or chrome://tracing):
// - one process per traced rank for the real timeline (pid = rank, "rank R (dp D, stage S)"),
//   and one per rank for the ideal (pid = world_size + rank, "rank R (ideal)"), sorted so
//   each rank's ideal sits right under its real one;
// - threads are the streams an op runs on: compute, pp send, pp recv, dp comm, sync comm
//   (kTimelineStreams below, tid = index); an op overlapping an earlier one on its stream
//   (traces have such, and Perfetto needs slices on a thread to nest) goes to an extra
//   "<stream> (overlap N)" thread, tid = stream + 5 * N, sorted right under its stream;
// - times are whole nanoseconds (ts and dur printed in microseconds with 3 decimals), so
//   ops that touch stay touching;
// - steps are laid end to end in step order, each shifted so its first op starts where the
//   previous step's window (real or ideal, whichever is longer) ended plus a 10% gap, and the
//   real and ideal copies of a step share one shift so they line up;
// - "X" events, name = op type, cat = stream, args {step, seq, mb, mc} (mb, mc only when >= 0).
// Returns the number of "X" events written.
size_t write_timeline_json(const TimelineInput& in, std::ostream& out);

inline constexpr int kNumTimelineStreams = 5;
inline constexpr const char* kTimelineStreams[kNumTimelineStreams] = {"compute", "pp send", "pp recv", "dp comm",
                                                                      "sync comm"};
// Stream (tid) of an op type.
int timeline_stream(OpType t);

}  // namespace sp::whatif
