#include "host_member.h"

#include <sys/socket.h>

#include "heartbeat_link.h"
#include "host_keys.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline {
namespace {

// Bytes that may wait for the leader before this rank stops taking its own summaries (a few
// steps of a large summary; the runtime's queue holds the rest, bounded).
constexpr size_t kOutboxLimit = 1u << 20;
constexpr auto kConnectRetry = std::chrono::milliseconds(20);

}  // namespace

HostMember::HostMember(const TransportContext& c, std::string leader_socket, int leader_rank,
                       std::string host_key, TransportWarning* warning)
    : c_(c), leader_socket_(std::move(leader_socket)), leader_rank_(leader_rank),
      host_key_(std::move(host_key)),
      warning_(warning), started_(Clock::now()), next_connect_(started_) {}

bool HostMember::wants_own() const {
  if (gone_) return !own_done_;  // popped and dropped: the runtime's queue must not fill up
  return socket_ != nullptr && !own_done_ && socket_->outbox_bytes() < kOutboxLimit &&
         in_flight_.size() <= static_cast<size_t>(c_.o.max_lag);
}

void HostMember::offer_own(EncodedSummary&& summary) {
  inject_fault(summary.step);
  if (gone_ || !socket_) {
    c_.counters->summaries_discarded++;
    return;
  }
  std::string payload;
  runtime::wire::Writer(&payload).i64(summary.step);
  payload += summary.bytes;
  socket_->queue(FrameType::kSummary, payload, SIZE_MAX);
  in_flight_.push_back(summary.step);
  c_.counters->summaries_sent++;
  c_.counters->bytes_sent += payload.size();
}

void HostMember::connect(Clock::time_point now) {
  if (now < next_connect_) return;
  next_connect_ = now + kConnectRetry;
  bool retry = false;
  std::string error;
  socket_ = leader_socket_ == "-" ? nullptr : connect_frame_socket(leader_socket_, &retry, &error);
  if (socket_) {
    std::string hello;
    runtime::wire::Writer(&hello).i32(c_.o.rank);
    socket_->queue(FrameType::kHello, hello, SIZE_MAX);
    return;
  }
  if (now - started_ > c_.o.connect_timeout || leader_socket_ == "-") {
    unreachable_ = true;
    // The leader counted this rank among its members: it is not one (it waits for no hello).
    std::string ignored;
    c_.store->add(host::members_key(c_.o, host_key_), -1, &ignored);
    (*warning_)("cannot reach this host's leader (rank " + std::to_string(leader_rank_) + "): " +
                (error.empty() ? std::string("it has no socket") : error) +
                "; this rank sends as a host of its own");
  }
}

// At the end of the job the leader's process may end first: count, do not warn. While the job
// runs, its summaries still reach rank 0: it sends as a host of its own from now on (what it
// had sent that the leader did not post is lost, and counted).
void HostMember::lose_leader(const std::string& why, bool stopping) {
  socket_.reset();
  if (own_done_ || stopping) {
    gone_ = true;
    return;
  }
  c_.counters->summaries_discarded += in_flight_.size();
  in_flight_.clear();
  unreachable_ = true;
  // Said by the transport once this rank's first post as a host of its own went through: when
  // the leader's process died with the job (a crash), this one is on its way out too, and its
  // store may be gone: then that is the one warning.
  why_alone_ = "lost this host's leader (rank " + std::to_string(leader_rank_) + "): " + why +
               "; this rank sends as a host of its own from now on";
}

void HostMember::take_frame(const Frame& f) {
  runtime::wire::Reader r(f.payload, 0);
  if (f.type == FrameType::kStop) remote_stop_ = runtime::wire::printable(f.payload);  // printed
  int64_t posted = 0;
  if (f.type == FrameType::kPosted && r.i64(&posted)) {
    while (!in_flight_.empty() && in_flight_.front() <= posted) in_flight_.pop_front();
  }
  uint64_t episode = 0;
  if (f.type == FrameType::kHang && r.u64(&episode)) c_.link->notice(episode);
  if (f.type == FrameType::kRecording) {
    const auto notice = host::parse_recording_frame(f.payload);
    if (!notice) {
      c_.counters->bad_recording_frames++;
    } else if (c_.recording && c_.recording->take(*notice)) {
      c_.counters->recording_notices++;
    }
  }
  if (f.type == FrameType::kHostBeats) {
    std::vector<HostBeats> beats;
    std::string error;
    if (!parse_host_beats(f.payload, c_.o.world_size, &beats, &error)) {
      c_.link->bad("from this host's leader (rank " + std::to_string(leader_rank_) + "): " + error);
    } else if (beats.size() != 1 || beats[0].leader != leader_rank_) {
      c_.link->bad("this host's leader (rank " + std::to_string(leader_rank_) +
                   ") sent heartbeats that are not its host's");
    } else {
      host_beats_ = TimedHostBeats{std::move(beats[0]), Clock::now(), std::chrono::milliseconds(2000)};
    }
  }
}

void HostMember::read_leader(bool stopping) {
  std::vector<Frame> frames;
  std::string error;
  const bool open = socket_->read(&frames, 16, &error);
  for (const Frame& f : frames) take_frame(f);
  if (!open) lose_leader(error.empty() ? "it closed the connection" : error, stopping);
}

// Small and periodic: it goes out even while summaries wait for room (a full outbox means the
// leader reads nothing anyway).
void HostMember::send_heartbeat(Clock::time_point now) {
  if (now < next_look_ || bye_queued_) return;
  next_look_ = now + kHeartbeatSoonest;
  Heartbeat hb;
  if (!c_.link->own(&hb)) return;
  if (now < next_heartbeat_ && hb.last_marked_step == sent_step_) return;
  next_heartbeat_ = now + kHeartbeatEvery;
  sent_step_ = hb.last_marked_step;
  if (socket_->queue(FrameType::kHeartbeat, encode_heartbeat_frame(c_.o.rank, hb), kOutboxLimit)) {
    c_.counters->heartbeats_sent++;
  }
}

std::optional<TimedHostBeats> HostMember::host_beats(Clock::time_point) const {
  return host_beats_;
}

void HostMember::announce_hang(uint64_t episode) {
  if (!socket_) return;
  std::string payload;
  runtime::wire::Writer(&payload).u64(episode);
  socket_->queue(FrameType::kHang, payload, SIZE_MAX);
}

void HostMember::announce_recording(const RecordingNotice& notice) {
  if (socket_) socket_->queue(FrameType::kRecording, host::recording_frame(notice), SIZE_MAX);
}

// STRAGGLER_PROBE_FAULT_INJECT=socket: the highest rank that does not lead closes its socket to
// the leader once, at step 5 (as a leader that restarts its probe, or a socket torn down, would).
void HostMember::inject_fault(int64_t step) {
  if (c_.o.fault != TransportFault::kCloseSocket || fault_done_ || step < 5 || !socket_) return;
  const int victim = c_.o.world_size - 1 == leader_rank_ ? c_.o.world_size - 2 : c_.o.world_size - 1;
  if (c_.o.rank != victim) return;
  fault_done_ = true;
  ::shutdown(socket_->fd(), SHUT_RDWR);
}

bool HostMember::pump(Clock::time_point now, bool stopping) {
  if (gone_ || unreachable_) return false;
  if (!socket_) {
    connect(now);
    if (!socket_) return false;
  }
  std::string error;
  if (own_done_ && !bye_queued_ && socket_->outbox_empty()) {
    socket_->queue(FrameType::kBye, "", SIZE_MAX);
    bye_queued_ = true;
  }
  send_heartbeat(now);
  const size_t before = socket_->outbox_bytes();
  if (!socket_->flush(&error)) {
    lose_leader(error, stopping);
    return true;
  }
  read_leader(stopping);
  return socket_ == nullptr || socket_->outbox_bytes() != before;
}

bool HostMember::finished() const {
  if (gone_ || unreachable_) return true;
  return bye_queued_ && socket_ != nullptr && socket_->outbox_empty();
}

void HostMember::give_up_all() {
  std::string error;
  if (socket_) socket_->flush(&error);
}

void HostMember::fds(std::vector<int>* out) const {
  if (socket_) out->push_back(socket_->fd());
}

}  // namespace sp::rank_pipeline
