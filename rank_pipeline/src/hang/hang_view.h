// Rank 0's picture of the job from the heartbeats it holds (hang_watch.h decides when to look):
// each rank fresh, silent or unseen; the step that has not completed everywhere; how long no
// step has; and, among the ranks still alive, which are behind the others. Pure: the watch and
// the tests feed it.
//
// - silent: its heartbeat stopped coming (over `silent_after`): its process is frozen
//   (SIGSTOP, descheduled), or its probe's thread is stuck. Silence is the evidence.
// - unseen: nothing recent is known (its host's leader is itself silent, or its host has not
//   answered rank 0's ask yet).
// - behind: alive, but less far in the step than most alive ranks (an earlier step, or fewer of
//   the step's events recorded): the likely culprit when nobody is silent.
// - waiting: alive and as far as the others: they wait (in a collective) for someone.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "heartbeat.h"
#include "base/rank_row.h"

namespace sp::rank_pipeline {

using HangClock = std::chrono::steady_clock;

struct TimedHostBeats {
  HostBeats beats;
  HangClock::time_point at;  // when this rank got it (ages and silences grow from there)
  // Older than this, the leader has stopped sending it: the leader is silent, and what its
  // members did since is unseen. Over the socket a few heartbeat periods; from the store, a
  // round plus the leaders' ctl cadence.
  std::chrono::milliseconds stale_after{2000};
};

enum class RankState { kFresh, kSilent, kUnseen };

struct RankView {
  int rank = -1;
  RankState state = RankState::kUnseen;
  bool known = false;      // hb holds its last heartbeat (aged to now)
  int64_t silent_ms = -1;  // since its last heartbeat reached anyone; -1: never
  Heartbeat hb;
};

struct JobView {
  std::vector<RankView> ranks;  // index = rank
  // The step the job stopped in: the lowest step some fresh rank has not completed (the silent
  // ranks' when none is fresh: a silent rank's heartbeat predates its stop); -1: none known.
  int64_t incomplete_step = -1;
  int64_t stalled_ms = 0;        // the longest any known rank has gone without marking a step
  std::vector<int> silent, behind, waiting, unseen;
  // Every rank alive and each finished an op within silent_after: a long step, not a hang.
  bool busy = false;
  bool all_seen() const { return unseen.empty(); }
};

struct ViewInput {
  int world_size = 1;
  int self = 0;                          // this rank (its own heartbeat is fresh)
  std::optional<Heartbeat> own;
  std::vector<TimedHostBeats> hosts;     // what this rank holds of each host
  HangClock::time_point now;
  std::chrono::milliseconds silent_after{2000};
};

JobView build_view(const ViewInput& in);

}  // namespace sp::rank_pipeline
