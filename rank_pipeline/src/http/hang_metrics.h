// Rank 0's hang episodes (hang_board.h) as the metrics server shows them: the /metrics families
// (straggler_probe_hang_*) and /status' "hang" key, both from one snapshot of the board taken
// when the scrape comes. Bounded like the hang line: at most kNamedPerKind (hang_line.h) ranks of
// each state get a series or a row; straggler_probe_hang_ranks and "counts" say how many there
// are in all. Ages are the board's, grown by the time since the watch's look (at most a look,
// 0.1 s, unless the transport thread is held up).
#pragma once

#include <chrono>
#include <functional>

#include <nlohmann/json.hpp>

#include "exposition.h"
#include "hang/hang_board.h"

namespace sp::rank_pipeline::http {

// labels: adds the board's own labels (job) to a sample's.
void write_hang_families(Exposition* e, const HangBoard::Snapshot& hangs, OpenHang::Clock::time_point now,
                         const std::function<Labels(Labels)>& labels);
// {"open": null or the episode (step, since, stalled_s, ranks with host, gpu, last op and ages,
// counts), "episodes_total": N}. wall_now: the same moment as `now`, for "since".
nlohmann::ordered_json hang_status(const HangBoard::Snapshot& hangs, OpenHang::Clock::time_point now,
                                   std::chrono::system_clock::time_point wall_now);

}  // namespace sp::rank_pipeline::http
