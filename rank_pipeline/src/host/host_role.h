// What a rank does for its host in the host-aggregated protocol (transport.h): lead it
// (host_leader.h: collect the host's summaries, post one message per step) or be one of its
// members (host_member.h: hand its summaries to the leader). The transport thread drives one
// role with its own summaries; pump() never blocks except in store calls.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "hang/hang_view.h"
#include "transport/summary_source.h"
#include "transport/transport.h"

namespace sp::rank_pipeline {

class HostRole {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~HostRole() = default;

  // Room for this rank's next summary now (false: leave it in the runtime's queue, whose bound
  // then skips whole steps and says so).
  virtual bool wants_own() const = 0;
  virtual void offer_own(EncodedSummary&& summary) = 0;
  virtual void own_done() = 0;  // this rank's summaries are over (the job ends)
  // One pass of work; true when something moved. `stopping`: the job is ending.
  virtual bool pump(Clock::time_point now, bool stopping) = 0;
  // Stopping and nothing of this rank's (or host's) is left to send.
  virtual bool finished() const = 0;
  // The drain deadline passed: send what is there now.
  virtual void give_up_all() = 0;
  // Some rank asked every probe to step aside (its reason).
  virtual std::optional<std::string> remote_stop() const = 0;
  // This rank stops everyone: tell the host's members (the store's ctl key is written by the
  // caller).
  virtual void broadcast_stop(const std::string& why) = 0;
  // Sockets worth waking up for.
  virtual void fds(std::vector<int>* out) const = 0;
  // A leader waits for its members' sockets; a member mostly for its own runtime's summaries.
  virtual bool leads() const = 0;
  // A member that could not reach its leader (or lost it mid-run): its thread makes it lead a
  // host of its own.
  virtual bool alone() const { return false; }
  // The warning to give once it posted on its own ("": already said).
  virtual std::string why_alone() const { return ""; }
  // Hang detection (hang_watch.h): this host's heartbeats as this rank holds them (a leader its
  // own aggregate, made now; rank 0 as a member the last one its leader sent); nullopt: none.
  virtual std::optional<TimedHostBeats> host_beats(Clock::time_point) const { return std::nullopt; }
  // Rank 0 suspects hang `episode`: tell this host's ranks (they dump their stacks if asked to).
  virtual void announce_hang(uint64_t) {}
  // Rank 0 (/control): recording pauses or resumes on this host's ranks (rank 0 applied it).
  virtual void announce_recording(const RecordingNotice&) {}
};

}  // namespace sp::rank_pipeline
