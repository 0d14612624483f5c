// The threads of the host-aggregated protocol (transport.h): every rank elects (or finds) its
// host's leader, then feeds its own summaries to its role (host_leader.h or host_member.h);
// rank 0 also runs the step collector (step_collector.h) on the same thread, so that one thread
// per rank drives everything and the store client is used from one place.
#include <algorithm>
#include <optional>
#include <utility>

#include "host_election.h"
#include "host_keys.h"
#include "host_leader.h"
#include "host_member.h"
#include "step_collector.h"
#include "transport_loop.h"

namespace sp::rank_pipeline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBusyWait = std::chrono::milliseconds(2);
constexpr auto kLeaderMaxWait = std::chrono::milliseconds(10);

class HostTransportThread final : public StoppableLoop {
 public:
  explicit HostTransportThread(TransportContext c)
      : c_(std::move(c)), warning_(c_.o.rank, c_.warn) {
    c_.counters->protocol = 1;
    thread_.start([this] { run(); });
  }

 private:
  void run() {
    if (c_.o.rank == 0) {
      collector_.emplace(c_, &warning_);
      collector_->start();
    }
    Election e = elect_host_leader(c_, &warning_);
    if (e.leader) {
      role_ = std::make_unique<HostLeader>(c_, std::move(e.listener), e.host_key, &warning_);
    } else {
      role_ = std::make_unique<HostMember>(c_, e.leader_socket, e.leader_rank, &warning_);
    }
    auto idle = c_.o.poll;
    while (true) {
      if (c_.stop->requested.load()) return stop_everyone(c_.stop->reason());
      c_.watchdog();
      bool progress = pump_once();
      if (const auto why = remote_stop()) {
        role_->broadcast_stop(*why);
        c_.on_remote_stop(*why);
        return;
      }
      if (stopping() && own_closed_ && role_->finished() && (!collector_ || collector_->caught_up())) {
        return;
      }
      if (past_deadline()) {
        role_->give_up_all();
        if (collector_) collector_->give_up_all();
        return;
      }
      idle = progress ? c_.o.poll : std::min(c_.o.max_poll, idle * 2);
      if (!progress && !role_->leads() && !collector_ && role_->wants_own() && !own_closed_) {
        own_wait_ms_ = static_cast<int>(idle.count());  // a member waits on its own queue
        continue;
      }
      // A leader waits on its members' sockets; its own queue has no fd, so the wait is short.
      std::vector<int> fds;
      role_->fds(&fds);
      wait_readable(fds, progress ? kBusyWait : std::min(idle, kLeaderMaxWait));
    }
  }

  bool pump_once() {
    bool progress = pull_own();
    const auto now = Clock::now();
    progress |= role_->pump(now, stopping());
    if (role_->alone()) {
      role_ = std::make_unique<HostLeader>(c_, nullptr, std::string(), &warning_);  // a host of one
    }
    if (collector_) progress |= collector_->pump(now);
    return progress;
  }

  // This rank's own summaries, while its role has room (else they wait in the runtime's queue).
  bool pull_own() {
    bool progress = false;
    for (int i = 0; i < 64 && !own_closed_ && role_->wants_own(); ++i) {
      EncodedSummary s;
      std::string error;
      const int wait_ms = std::exchange(own_wait_ms_, 0);
      switch (c_.o.source->pop(stopping() ? 0 : wait_ms, &s, &error)) {
        case SummarySource::Status::kOk:
          if (s.step < c_.o.first_step) continue;  // warm-up: not analysed, not sent
          if (collector_) collector_->note_own(s.step);
          role_->offer_own(std::move(s));
          progress = true;
          continue;
        case SummarySource::Status::kEmpty:
          if (stopping()) close_own();
          return progress;
        case SummarySource::Status::kClosed: close_own(); return progress;
        case SummarySource::Status::kBad:
          c_.counters->bad_summaries++;
          warning_(error);
          continue;
      }
    }
    return progress;
  }

  void close_own() {
    own_closed_ = true;
    role_->own_done();
  }

  std::optional<std::string> remote_stop() const {
    if (auto why = role_->remote_stop()) return why;
    if (collector_) return collector_->remote_stop();
    return std::nullopt;
  }

  // This rank's probe failed (or rank 0's analysis did): every rank steps aside.
  void stop_everyone(const std::string& why) {
    if (collector_) {
      collector_->publish_stop(why);
    } else {
      std::string error;
      c_.store->set(host::ctl_key(c_.o), host::stop_value("rank " + std::to_string(c_.o.rank) + ": " + why),
                    &error);
    }
    role_->broadcast_stop(why);
  }

  TransportContext c_;
  TransportWarning warning_;
  std::optional<StepCollector> collector_;
  std::unique_ptr<HostRole> role_;
  bool own_closed_ = false;
  int own_wait_ms_ = 0;  // how long the next pop of this rank's summaries may wait
};

}  // namespace

std::unique_ptr<TransportThread> start_host_sender(TransportContext context) {
  return std::make_unique<HostTransportThread>(std::move(context));
}

std::unique_ptr<TransportThread> start_host_collector(TransportContext context) {
  return std::make_unique<HostTransportThread>(std::move(context));
}

}  // namespace sp::rank_pipeline
