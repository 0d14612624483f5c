// The report's timeline.json: the last steps' ops on every rank, real and ideal side by side, in
// the Chrome / Perfetto JSON trace format (ui.perfetto.dev opens it). Written as text, not built
// as a JSON document first: a large job's last three steps are 10^5 to 10^6 events, and rank 0
// rewrites the file while the job runs.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "timeline_ranks.h"

namespace sp::online {

struct TimelineOp {
  int rank = 0;
  int type = 0;  // index into its TimelineStep's type_names (a string per op cost an allocation
                 // per op, ~200k a step at 4096 ranks, and a third of the timeline's memory)
  bool comm = false;
  double real_start = 0, real_end = 0, ideal_start = 0, ideal_end = 0;  // seconds in the step
};

struct TimelineStep {
  int64_t step = 0;
  std::vector<int> rank_dp, rank_stage;
  std::vector<std::string> type_names;
  std::vector<TimelineOp> ops;
  // For choosing the ranks drawn when not all fit (timeline_ranks.h): the rank or stage the
  // step's verdict named (-1: none) and each rank's S_w.
  int named_rank = -1, named_stage = -1;
  std::vector<double> rank_score;
};

// One process per rank and per real / ideal, threads "compute" (the compute chain: regions, GC, data waits) and "communication"; the
// steps end to end. `run` goes under otherData.straggler_probe_run (final or partial). The ranks
// drawn: within `limit` (timeline_ranks.h); when some are left out, otherData.
// straggler_probe_timeline and a global instant event at the start say how many and how to
// draw them all.
std::string timeline_json_text(const std::deque<TimelineStep>& steps, const nlohmann::ordered_json& run,
                               const TimelineRankLimit& limit = {});

}  // namespace sp::online
