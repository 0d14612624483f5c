#include "host_member.h"

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

void HostMember::lose_leader(const std::string& why, bool stopping) {
  gone_ = true;
  socket_.reset();
  // At the end of the job the leader's process may end first: count, do not warn.
  if (!own_done_ && !stopping) {
    (*warning_)("lost this host's leader (rank " + std::to_string(leader_rank_) + "): " + why +
                "; this rank's summaries are dropped from now on");
  }
}

void HostMember::read_leader(bool stopping) {
  std::vector<Frame> frames;
  std::string error;
  const bool open = socket_->read(&frames, 16, &error);
  for (const Frame& f : frames) {
    if (f.type == FrameType::kStop) remote_stop_ = f.payload;
    int64_t posted = 0;
    if (f.type == FrameType::kPosted && runtime::wire::Reader(f.payload, 0).i64(&posted)) {
      while (!in_flight_.empty() && in_flight_.front() <= posted) in_flight_.pop_front();
    }
  }
  if (!open) lose_leader(error.empty() ? "it closed the connection" : error, stopping);
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
