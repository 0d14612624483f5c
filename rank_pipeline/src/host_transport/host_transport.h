// One rank's side of the host-aggregated protocol (transport.h), as a state machine: elect (or
// find) the host's leader, then on every pass feed the rank's own summaries to its role
// (host_leader.h or host_member.h) and, on rank 0, run the step collector (step_collector.h) and
// the hang watch (hang_watch.h).
// A rank's transport thread drives one (start_host_sender / start_host_collector); bench/scale
// drives thousands of simulated ranks' from a few threads, with the same code.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hang_watch.h"
#include "host/host_role.h"
#include "step_collector.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline {

class HostTransport {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kRunning, kFinished, kStoppedRemotely, kStoppedLocally };

  explicit HostTransport(TransportContext c);
  // The election and rank 0's first ack (store calls): on the driving thread, before pass().
  void start();
  // One pass. `stopping`: the job ends (drain); `past_deadline`: send what is there now.
  // own_wait_ms: how long it may wait for this rank's next summary.
  State pass(bool stopping, bool past_deadline, int own_wait_ms, bool* progress);
  // Whether this rank may wait on its own queue when idle (a member with room for more).
  bool waits_on_own_queue() const;
  void fds(std::vector<int>* out) const { role_->fds(out); }
  const TransportContext& context() const { return c_; }

 private:
  bool pull_own(bool stopping, int own_wait_ms);
  void inject_delay(int64_t step);
  std::optional<std::string> remote_stop() const;
  void stop_everyone(const std::string& why);

  TransportContext c_;
  TransportWarning warning_;
  std::optional<StepCollector> collector_;
  std::optional<HangWatch> hang_watch_;  // rank 0
  std::unique_ptr<HostRole> role_;
  bool own_closed_ = false;
  bool delayed_ = false;  // TransportFault::kDelay happened
  std::string alone_warning_;  // said once the rank's first post on its own went through
  uint64_t posts_when_alone_ = 0;
};

}  // namespace sp::rank_pipeline
