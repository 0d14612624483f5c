// A rank that is not its host's leader (host-aggregated protocol, transport.h): hands its
// summaries to the leader over the host's Unix socket (local_channel.h) and hears the leader's
// stop. It never waits on the leader: it has at most max_lag + 1 summaries out that the leader
// has not posted yet (the leader says which step it posted last), and leaves the rest in the
// runtime's bounded queue, which skips whole old steps when rank 0 falls behind. A leader it
// cannot reach within connect_timeout, or loses while the job runs (its socket closed), makes it
// alone(), and its thread then leads a host of its own (one warning).
//
// Every kHeartbeatEvery it also sends its heartbeat (heartbeat.h), whatever its summaries do:
// the leader tells a rank that stopped (its process frozen) by the heartbeats that stop coming.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "host_role.h"
#include "local_channel.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

class HostMember final : public HostRole {
 public:
  HostMember(const TransportContext& c, std::string leader_socket, int leader_rank,
             std::string host_key, TransportWarning* warning);

  bool wants_own() const override;
  void offer_own(EncodedSummary&& summary) override;
  void own_done() override { own_done_ = true; }
  bool pump(Clock::time_point now, bool stopping) override;
  bool finished() const override;
  void give_up_all() override;
  std::optional<std::string> remote_stop() const override { return remote_stop_; }
  void broadcast_stop(const std::string&) override {}  // the leader relays; members do not
  void fds(std::vector<int>* out) const override;
  bool leads() const override { return false; }
  bool alone() const override { return unreachable_; }
  std::string why_alone() const override { return why_alone_; }
  std::optional<TimedHostBeats> host_beats(Clock::time_point now) const override;
  void announce_hang(uint64_t episode) override;
  void announce_recording(const RecordingNotice& notice) override;

 private:
  void connect(Clock::time_point now);
  void read_leader(bool stopping);
  void take_frame(const Frame& f);
  void lose_leader(const std::string& why, bool stopping);
  void send_heartbeat(Clock::time_point now);
  void inject_fault(int64_t step);

  const TransportContext& c_;
  std::string leader_socket_;
  int leader_rank_;
  std::string host_key_;
  TransportWarning* warning_;
  std::unique_ptr<FrameSocket> socket_;
  bool gone_ = false, unreachable_ = false, own_done_ = false, bye_queued_ = false;
  Clock::time_point started_, next_connect_;
  std::optional<std::string> remote_stop_;
  std::deque<int64_t> in_flight_;  // steps sent that the leader has not posted yet
  Clock::time_point next_heartbeat_, next_look_;
  int64_t sent_step_ = INT64_MIN;  // the step its last heartbeat said was marked
  std::optional<TimedHostBeats> host_beats_;  // rank 0: the host's, as its leader last sent them
  bool fault_done_ = false;
  std::string why_alone_;  // lost the leader mid-run: the warning, once it sends on its own
};

}  // namespace sp::rank_pipeline
