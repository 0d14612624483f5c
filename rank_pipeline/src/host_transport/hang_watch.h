// Rank 0's hang detection ("silence is evidence"), run by its transport thread after the step
// collector (host_transport.h), looking at most every kLookEvery:
//
// - The bound: max(hang_multiple x the median of rank 0's recent step times, hang_after); while
//   fewer than kMinSteps steps are known, the largest of them instead of the median, and 3 x
//   hang_after before any is. Never under the time silence takes to show (kSilentAfter plus a
//   heartbeat period).
// - A hang is suspected once some rank has not marked a step for longer than the bound (rank 0's
//   own heartbeat, and its host's as its leader holds them), unless every rank is alive and
//   busy (each finished an op within the last seconds: a long step, not a stuck one).
// - Other hosts' heartbeats are asked for only then: rank 0 writes " hang <episode> <round>"
//   into ctl (host_keys.h); each leader answers each round once at its usual ctl reads, with
//   one append to hb/<round>; rank 0 reads that key (one get a second) and starts a new round
//   every kRoundEvery. The first line waits for every host's answer, at most kAnswerWait.
// - One line names the silent ranks, the ranks behind and the ranks unseen (hang_line.h); it is
//   said again each time the stall doubles, and a last line when the step completes everywhere.
//   Each episode goes to the hang board (report.json's "hangs"); while one is open, what each
//   look sees goes there too (the metrics' and /status' "hang").
// - Rank 0 tells its host's ranks (and through the ask every leader tells its own) that a hang
//   is suspected: each rank dumps its stacks then when STRAGGLER_PROBE_HANG_DUMP asks for it.
//
// A clean job pays nothing for it in the store: no key is read or written until a step is
// overdue.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "hang/hang_board.h"
#include "hang/hang_line.h"
#include "hang/hang_view.h"
#include "host/host_role.h"
#include "step_collector.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

// The bound from rank 0's recent step times in ms (hang_watch.cpp says why before kMinSteps).
std::chrono::milliseconds hang_bound_of(std::chrono::milliseconds floor, double multiple,
                                        const std::deque<int64_t>& step_ms);

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kLookEvery = std::chrono::milliseconds(100);
  static constexpr auto kSilentAfter = std::chrono::milliseconds(2000);
  static constexpr auto kRoundEvery = std::chrono::milliseconds(5000);
  static constexpr auto kReadEvery = std::chrono::milliseconds(500);
  static constexpr auto kAnswerWait = std::chrono::milliseconds(6000);
  // A store answer is a round plus a leader's ctl cadence (5 s) old at worst.
  static constexpr auto kAnswerStaleAfter = std::chrono::milliseconds(15000);
  static constexpr size_t kMinSteps = 3;
  static constexpr size_t kStepWindow = 64;

  HangWatch(const TransportContext& c, StepCollector* collector);
  // `stopping`: the job ends; an open episode is closed unresolved, nothing new is opened.
  void pump(Clock::time_point now, HostRole& role, bool stopping);
  std::chrono::milliseconds bound() const;

 private:
  struct Episode {
    HangEpisode record;
    Clock::time_point opened, first_due, next_round, next_read;
    int64_t stalled_at_open_ms = 0;
    int64_t next_line_ms = 0;  // the stall at which the line is said again
    bool printed = false, need_remote = false;
    uint64_t round = 0;
    std::string named;  // the first line's named ranks, for the last line
  };

  void learn(const Heartbeat& own, Clock::time_point now);
  JobView look(Clock::time_point now, HostRole& role, const Heartbeat& own) const;
  void open(const JobView& v, Clock::time_point now, HostRole& role);
  void follow(const JobView& v, Clock::time_point now);
  bool needs_other_hosts(const JobView& v) const;
  void say(HangLineKind kind, const JobView& v);
  void show(const JobView& v, Clock::time_point now) const;
  void close(Clock::time_point now, bool resumed);
  void next_round(Clock::time_point now);
  void read_answers(Clock::time_point now);
  void record() const;

  const TransportContext& c_;
  StepCollector* collector_;
  Clock::time_point next_look_;
  int64_t last_step_ = INT64_MIN;  // rank 0's last marked step seen, and when it was marked
  Clock::time_point last_mark_at_;
  std::deque<int64_t> step_ms_;
  uint64_t episodes_ = 0;
  std::optional<Episode> ep_;
  std::optional<Clock::time_point> rearmed_;  // the last episode's end
  struct Answer {
    TimedHostBeats beats;
    uint64_t round = 0;
  };
  std::map<int, Answer> answers_;  // by leader rank, during an episode
};

}  // namespace sp::rank_pipeline
