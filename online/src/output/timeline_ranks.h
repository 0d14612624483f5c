// Which ranks' lanes timeline.json draws. Every rank's when they fit; beyond that (a large job's
// file was 130 MB at 4096 ranks, rewritten while the job runs and too large for a browser to
// open) the ranks a user opens the timeline for: rank 0, the ranks the drawn steps named, one
// representative per stage (its slowest), then by score the slowest, with every fourth pick the
// fastest (the picture of a healthy rank to compare with). The file says how many were left
// out and which setting draws them all.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace sp::online {

struct TimelineStep;

// The default cap when no rank count is set: 16 MiB of events. Why that much: Perfetto's UI and
// chrome://tracing parse a JSON trace whole in the browser's memory (several times its size),
// so a file of tens of MB opens in seconds where 130 MB stalls or fails; rank 0 rewrites it
// while the job runs, and a bounded file keeps that write (and its transient string) bounded
// whatever the job's size. At the soak bench's 8 stages x 8 micro-batches (~100 ops a rank and
// step, 3 steps) that draws a few hundred ranks; every rank of a job of up to a few hundred.
inline constexpr size_t kTimelineByteBudget = size_t{16} << 20;

struct TimelineRankLimit {
  int max_ranks = 0;  // > 0: at most this many ranks (the user's timeline_ranks); 0: by bytes
  size_t byte_budget = kTimelineByteBudget;
};

struct TimelineRanks {
  std::vector<char> drawn;  // per rank: 1 when its lanes are drawn
  int world = 0, shown = 0;
  int left_out() const { return world - shown; }
};

// Estimated bytes of one rank's events over `steps` (two events per op, real and ideal, plus
// its lanes' metadata): within a few percent of what timeline_json_text writes.
std::vector<size_t> timeline_rank_bytes(const std::deque<TimelineStep>& steps, int world);

TimelineRanks choose_timeline_ranks(const std::deque<TimelineStep>& steps, int world,
                                    const TimelineRankLimit& limit);

// The order ranks are drawn in when not all fit (see the header comment); every rank once.
std::vector<int> timeline_rank_priority(const std::deque<TimelineStep>& steps, int world);

}  // namespace sp::online
