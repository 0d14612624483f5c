#include "hang_view.h"

#include <algorithm>
#include <utility>

namespace sp::rank_pipeline {
namespace {

int64_t ms_between(HangClock::time_point from, HangClock::time_point to) {
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count());
}

// What one host's aggregate says of each of its ranks, seen now. A member is silent when its
// leader had not heard from it for silent_after when it made the aggregate. When the aggregate
// itself is stale, the leader is silent and its members are unseen (nothing says what they did
// since), unless they were silent already.
RankView from_host(const TimedHostBeats& h, const RankBeat& rb, const ViewInput& in) {
  const int64_t extra = ms_between(h.at, in.now);
  const bool stale = extra > h.stale_after.count();
  RankView v;
  v.rank = rb.rank;
  v.known = rb.heard;
  if (rb.heard) v.hb = aged(rb.hb, extra);
  v.silent_ms = rb.heard ? rb.silent_ms + extra : -1;
  const bool silent = rb.silent_ms > in.silent_after.count();
  if (!rb.heard) {
    v.state = RankState::kUnseen;
  } else if (rb.rank == h.beats.leader) {
    v.state = stale ? RankState::kSilent : RankState::kFresh;
  } else {
    v.state = silent ? RankState::kSilent : stale ? RankState::kUnseen : RankState::kFresh;
  }
  return v;
}

// Which of two views of one rank to keep: the one that knows more, then the fresher.
bool better(const RankView& a, const RankView& b) {
  if (a.known != b.known) return a.known;
  if (a.state == RankState::kUnseen && b.state != RankState::kUnseen) return false;
  if (b.state == RankState::kUnseen && a.state != RankState::kUnseen) return true;
  return a.silent_ms < b.silent_ms;
}

// Alive ranks less far than the median alive rank: (last step marked, events into the next).
void split_alive(JobView* v) {
  std::vector<std::pair<int64_t, uint64_t>> keys;
  std::vector<int> alive;
  for (const RankView& r : v->ranks) {
    if (r.state != RankState::kFresh) continue;
    alive.push_back(r.rank);
    keys.emplace_back(r.hb.last_marked_step, r.hb.events_in_step);
  }
  std::vector<std::pair<int64_t, uint64_t>> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  const auto median = sorted.empty() ? std::make_pair(int64_t{0}, uint64_t{0}) : sorted[sorted.size() / 2];
  for (size_t i = 0; i < alive.size(); ++i) {
    (alive.size() > 1 && keys[i] < median ? v->behind : v->waiting).push_back(alive[i]);
  }
}

}  // namespace

JobView build_view(const ViewInput& in) {
  JobView v;
  v.ranks.resize(static_cast<size_t>(std::max(0, in.world_size)));
  for (int r = 0; r < in.world_size; ++r) v.ranks[static_cast<size_t>(r)].rank = r;
  for (const TimedHostBeats& h : in.hosts) {
    for (const RankBeat& rb : h.beats.ranks) {
      if (rb.rank < 0 || rb.rank >= in.world_size) continue;
      RankView candidate = from_host(h, rb, in);
      RankView& slot = v.ranks[static_cast<size_t>(rb.rank)];
      if (better(candidate, slot)) slot = std::move(candidate);
    }
  }
  if (in.own && in.self >= 0 && in.self < in.world_size) {
    RankView& me = v.ranks[static_cast<size_t>(in.self)];
    me.state = RankState::kFresh;
    me.known = true;
    me.silent_ms = 0;
    me.hb = *in.own;
  }
  // The step: the fresh ranks' lowest, the silent ranks' only when no rank is fresh. A silent
  // rank's last heartbeat left it up to a heartbeat period before it stopped: in a job of
  // 40 ms steps that is steps before the one it stopped in (the hang line said 27 where the
  // job, and the step's verdict, stopped in 30). The fresh ranks wait in the step it stopped.
  int64_t fresh_step = INT64_MAX, silent_step = INT64_MAX;
  for (const RankView& r : v.ranks) {
    if (r.state == RankState::kSilent) v.silent.push_back(r.rank);
    if (r.state == RankState::kUnseen) v.unseen.push_back(r.rank);
    if (!r.known) continue;
    if (r.hb.mark_age_ms >= 0) v.stalled_ms = std::max(v.stalled_ms, r.hb.mark_age_ms);
    if (r.state == RankState::kUnseen) continue;  // what is held of it may be steps old
    int64_t& lowest = r.state == RankState::kFresh ? fresh_step : silent_step;
    lowest = std::min(lowest, r.hb.last_marked_step + 1);
  }
  if (fresh_step != INT64_MAX || silent_step != INT64_MAX) {
    v.incomplete_step = fresh_step != INT64_MAX ? fresh_step : silent_step;
  }
  split_alive(&v);
  v.busy = v.silent.empty() && v.unseen.empty() && !v.waiting.empty();
  for (const RankView& r : v.ranks) {
    if (r.state != RankState::kFresh) continue;
    if (!r.hb.has_event || r.hb.event_age_ms >= in.silent_after.count()) v.busy = false;
  }
  return v;
}

}  // namespace sp::rank_pipeline
