// A host's leader (host-aggregated protocol, transport.h): takes the summaries of the host's
// ranks (its own, and its members' over local_channel.h) and posts one message per step for the
// whole host: append d/<step>, then add the ranks it covers to n/<step>. A step is posted once
// every member has sent it or a later one (a rank that skipped a step stalls nobody), once a
// member is gone, or after host_timeout without it; those ranks are named missing (and a member
// that joins after steps were posted is named missing in those, once). It posts
// steps in order, at most max_lag past rank 0's ack (read from ctl every min(max_lag/2, 2) steps);
// beyond that it stops reading from the members that are ahead, so that what it holds stays
// bounded and the back-pressure ends in each rank's runtime queue, which skips whole steps.
//
// It also keeps each member's last heartbeat and when it came (heartbeat.h): the host's
// aggregate goes to rank 0 over its socket every kHeartbeatEvery when rank 0 is a member here,
// and to the store (hb/<round>) only when ctl carries rank 0's ask (a step overdue), once per
// round, read at the leader's usual ctl cadence.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hang/heartbeat.h"
#include "host_keys.h"
#include "host_role.h"
#include "local_channel.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

class HostLeader final : public HostRole {
 public:
  // listener: null for a host of one (a rank that could not reach its host's leader, or a
  // single-rank job). host_key: the members' counter this leader waits for at start.
  HostLeader(const TransportContext& c, std::unique_ptr<FrameListener> listener,
             std::string host_key, TransportWarning* warning);

  bool wants_own() const override;
  void offer_own(EncodedSummary&& summary) override;
  void own_done() override;
  bool pump(Clock::time_point now, bool stopping) override;
  bool finished() const override;
  void give_up_all() override;
  std::optional<std::string> remote_stop() const override { return remote_stop_; }
  void broadcast_stop(const std::string& why) override;
  void fds(std::vector<int>* out) const override;
  bool leads() const override { return true; }
  std::optional<TimedHostBeats> host_beats(Clock::time_point now) const override;
  void announce_hang(uint64_t episode) override;
  void announce_recording(const RecordingNotice& notice) override;

 private:
  struct Member {
    std::unique_ptr<FrameSocket> socket;  // null: this rank itself
    int rank = -1;                        // -1 until its hello
    int64_t latest = INT64_MIN;           // the last step it delivered
    bool done = false;                    // said bye, or gone
    bool left = false;                    // gone without a bye (not covered from then on)
    bool heard = false;                   // a heartbeat came (hb, heard_at)
    Heartbeat hb;
    Clock::time_point heard_at;
  };

  // Heartbeats (host_leader_beats.cpp).
  void take_heartbeat(Member& m, const std::string& payload);
  HostBeats aggregate(Clock::time_point now) const;
  void send_beats(Clock::time_point now);
  void answer_ask(const host::HangAsk& ask);
  void relay_hang(uint64_t episode);
  void relay_recording(const RecordingNotice& notice);  // from ctl or rank 0: applied, passed on
  struct Slot {
    std::vector<std::pair<int, std::string>> summaries;
    Clock::time_point first_seen;
  };

  void accept_members();
  bool read_member(Member& m);
  void take(Member& m, int64_t step, std::string bytes);
  void drop_member(Member& m, const std::string& why);
  bool settle(Clock::time_point now, bool stopping);
  bool ready(int64_t step, Clock::time_point now, bool stopping) const;
  void post(int64_t step);
  void tell_posted(int64_t step);
  void declare_late_joiners();
  void read_control(Clock::time_point now);
  void refresh_expected(Clock::time_point now);
  size_t open_limit() const;
  int64_t frontier() const;
  std::optional<int64_t> candidate() const;
  int hello_count() const;

  const TransportContext& c_;
  std::unique_ptr<FrameListener> listener_;
  std::string host_key_;
  TransportWarning* warning_;
  std::vector<Member> members_;  // [0]: this rank
  std::map<int64_t, Slot> slots_;
  std::optional<int64_t> ack_;        // rank 0's, once read
  std::optional<int64_t> next_post_;  // the next step this host posts
  std::optional<std::string> remote_stop_;
  int posts_since_control_ = 0;
  Clock::time_point last_control_read_;
  // Members expected (LOCAL_WORLD_SIZE, or those registered in host/<key>/n) that have not said
  // hello yet hold posting back (up to the host timeout); one that gives up on this leader
  // unregisters.
  int64_t expected_members_ = 1;
  Clock::time_point started_, next_expected_read_;
  std::chrono::milliseconds host_timeout_;
  bool holding_ = false;  // the next step is more than max_lag past rank 0's ack
  std::optional<Clock::time_point> eligible_since_;  // the next step could be posted since
  std::vector<int> joined_late_;  // said hello after steps were posted without them
  Clock::time_point held_since_;
  Clock::time_point next_beats_;   // the next aggregate to rank 0, when it is a member here
  Clock::time_point next_beats_look_;
  int64_t sent_marks_ = 0;         // the sum of the steps its last aggregate said were marked
  uint64_t answered_round_ = 0;    // rank 0's last ask this host answered in the store
};

}  // namespace sp::rank_pipeline
