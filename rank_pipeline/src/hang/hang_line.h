// Rank 0's hang lines (hang_watch.h says when), one line each:
//
//   straggler_probe hang suspected step=12 silent=rank:2 host=vm gpu=2 last=forward mb=0 step=12
//     17.2s ago; 3 ranks waiting (0,1,3) last=forward mb=0 17.1s ago; no step for 17.3s (bound 10.0s)
//   straggler_probe hang still suspected step=12 ... (the same, at growing intervals)
//   straggler_probe hang resumed step=12 after 21.4s (named silent=rank:2)
//
// Named first: silent ranks (their heartbeat stopped), then ranks behind the others, then ranks
// nothing is known of (unseen, and why); at most kNamedPerKind of each, then "+N more". Hosts and
// GPUs come from the rank table (gpu: the device, else the local rank; "?" when unknown).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hang_board.h"
#include "hang_view.h"
#include "base/rank_row.h"

namespace sp::rank_pipeline {

inline constexpr size_t kNamedPerKind = 4;

enum class HangLineKind { kSuspected, kStill };

std::string hang_line(HangLineKind kind, const JobView& view, const std::vector<RankInfo>& table,
                      int64_t step, double stalled_s, double bound_s);
// "silent=rank:2" / "behind=rank:3" / "no rank silent or behind": what the episode named.
std::string named_summary(const JobView& view);
std::string resumed_line(int64_t step, double after_s, const std::string& named);
// The named ranks for report.json: [{"as": "silent", "rank", "host", "gpu", "last", "step",
// "ago_s"}, ...].
nlohmann::ordered_json named_json(const JobView& view, const std::vector<RankInfo>& table);
// The ranks a line names and those waiting, at most `per_state` of each (silent, behind, unseen,
// waiting, in that order), for the metrics (HangBoard::show_open).
std::vector<HangRank> hang_ranks(const JobView& view, const std::vector<RankInfo>& table, size_t per_state);

}  // namespace sp::rank_pipeline
