#include "host_transport.h"

#include <algorithm>
#include <thread>

#include "host/heartbeat_link.h"
#include "host/host_election.h"
#include "host/host_keys.h"
#include "host/host_leader.h"
#include "host/host_member.h"

namespace sp::rank_pipeline {

HostTransport::HostTransport(TransportContext c)
    : c_(std::move(c)), warning_(c_.o.rank, c_.warn) {
  c_.counters->protocol = 1;
  c_.link = std::make_shared<HeartbeatLink>(c_.o, c_.counters, c_.warn);
  c_.recording = std::make_shared<RecordingRelay>(c_.o.set_recording_paused);
}

void HostTransport::start() {
  if (c_.o.rank == 0) {
    collector_.emplace(c_, &warning_);
    collector_->start();
    hang_watch_.emplace(c_, &*collector_);
  }
  Election e = elect_host_leader(c_, &warning_);
  if (e.leader) {
    role_ = std::make_unique<HostLeader>(c_, std::move(e.listener), e.host_key, &warning_);
  } else {
    role_ = std::make_unique<HostMember>(c_, e.leader_socket, e.leader_rank, e.host_key,
                                         &warning_);
  }
}

HostTransport::State HostTransport::pass(bool stopping, bool past_deadline, int own_wait_ms,
                                         bool* progress) {
  if (c_.stop->requested.load()) {
    stop_everyone(c_.stop->reason());
    return State::kStoppedLocally;
  }
  c_.watchdog();
  *progress = pull_own(stopping, own_wait_ms);
  const auto now = Clock::now();
  *progress |= role_->pump(now, stopping);
  if (role_->alone()) {
    alone_warning_ = role_->why_alone();
    posts_when_alone_ = c_.counters->host_messages_sent.load();
    role_ = std::make_unique<HostLeader>(c_, nullptr, std::string(), &warning_);  // a host of one
  }
  if (!alone_warning_.empty() && c_.counters->host_messages_sent.load() > posts_when_alone_) {
    warning_(alone_warning_);
    alone_warning_.clear();
  }
  if (collector_) *progress |= collector_->pump(now);
  if (collector_ && c_.o.recording_switch) {  // rank 0: /control paused or resumed recording
    const RecordingNotice notice = c_.o.recording_switch->current();
    if (c_.recording->take(notice)) {
      c_.counters->recording_notices++;
      collector_->set_recording(notice);
      role_->announce_recording(notice);
    }
  }
  if (hang_watch_) hang_watch_->pump(now, *role_, stopping);
  if (const auto why = remote_stop()) {
    role_->broadcast_stop(*why);
    c_.on_remote_stop(*why);
    return State::kStoppedRemotely;
  }
  if (stopping && own_closed_ && role_->finished() && (!collector_ || collector_->caught_up())) {
    return State::kFinished;
  }
  if (past_deadline) {
    role_->give_up_all();
    if (collector_) collector_->give_up_all();
    return State::kFinished;
  }
  return State::kRunning;
}

bool HostTransport::waits_on_own_queue() const {
  return !role_->leads() && !collector_ && role_->wants_own() && !own_closed_;
}

// This rank's own summaries, while its role has room (else they wait in the runtime's queue).
bool HostTransport::pull_own(bool stopping, int own_wait_ms) {
  bool progress = false;
  for (int i = 0; i < 64 && !own_closed_ && role_->wants_own(); ++i) {
    EncodedSummary s;
    std::string error;
    switch (c_.o.source->pop(stopping || i > 0 ? 0 : own_wait_ms, &s, &error)) {
      case SummarySource::Status::kOk:
        if (s.step < c_.o.first_step) continue;  // warm-up: not analysed, not sent
        inject_delay(s.step);
        if (collector_) collector_->note_own(s.step);
        role_->offer_own(std::move(s));
        progress = true;
        continue;
      case SummarySource::Status::kEmpty:
        if (stopping) {
          own_closed_ = true;
          role_->own_done();
        }
        return progress;
      case SummarySource::Status::kClosed:
        own_closed_ = true;
        role_->own_done();
        return progress;
      case SummarySource::Status::kBad:
        c_.counters->bad_summaries++;
        warning_(error);
        continue;
    }
  }
  return progress;
}

// STRAGGLER_PROBE_FAULT_INJECT=delay: rank 1's transport thread stalls once for 4 s at step 5
// (a descheduled probe thread, a slow socket): its summaries, and its heartbeats, arrive late.
void HostTransport::inject_delay(int64_t step) {
  if (c_.o.fault != TransportFault::kDelay || delayed_ || c_.o.rank != 1 || step < 5) return;
  delayed_ = true;
  std::this_thread::sleep_for(std::chrono::seconds(4));
}

std::optional<std::string> HostTransport::remote_stop() const {
  if (auto why = role_->remote_stop()) return why;
  if (collector_) return collector_->remote_stop();
  return std::nullopt;
}

// This rank's probe failed (or rank 0's analysis did): every rank steps aside.
// The reason names this rank on both paths (store and host socket): whichever reaches rank 0
// first is the one its warning quotes.
void HostTransport::stop_everyone(const std::string& why) {
  const std::string named = "rank " + std::to_string(c_.o.rank) + ": " + why;
  if (collector_) {
    collector_->publish_stop(named);
  } else {
    std::string error;
    c_.store->set(host::ctl_key(c_.o), host::stop_value(named), &error);
  }
  role_->broadcast_stop(named);
}

namespace {

constexpr auto kBusyWait = std::chrono::milliseconds(2);
constexpr auto kLeaderMaxWait = std::chrono::milliseconds(10);

class HostTransportThread final : public StoppableLoop {
 public:
  explicit HostTransportThread(TransportContext c) : transport_(std::move(c)) {
    thread_.start("sp_transport", [this] { run(); });
  }

 private:
  void run() {
    transport_.start();
    const TransportContext& c = transport_.context();
    auto idle = c.o.poll;
    int own_wait_ms = 0;
    while (true) {
      bool progress = false;
      const auto state = transport_.pass(stopping(), past_deadline(), own_wait_ms, &progress);
      if (state != HostTransport::State::kRunning) return;
      own_wait_ms = 0;
      idle = progress ? c.o.poll : std::min(c.o.max_poll, idle * 2);
      if (!progress && transport_.waits_on_own_queue()) {
        own_wait_ms = static_cast<int>(idle.count());  // a member waits on its own queue
        continue;
      }
      // A leader waits on its members' sockets; its own queue has no fd, so the wait is short.
      std::vector<int> fds;
      transport_.fds(&fds);
      wait_readable(fds, progress ? kBusyWait : std::min(idle, kLeaderMaxWait));
    }
  }

  HostTransport transport_;
};

}  // namespace

std::unique_ptr<TransportThread> start_host_transport(TransportContext context) {
  return std::make_unique<HostTransportThread>(std::move(context));
}

}  // namespace sp::rank_pipeline
