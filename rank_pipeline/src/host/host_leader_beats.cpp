// A host leader's heartbeats (host_leader.h): its members' last heartbeats, the host's aggregate
// for rank 0, and rank 0's hang notices passed on to the members.
#include <algorithm>

#include "heartbeat_link.h"
#include "host_leader.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline {
namespace {

int64_t ms_since(HostRole::Clock::time_point then, HostRole::Clock::time_point now) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count());
}

}  // namespace

void HostLeader::take_heartbeat(Member& m, const std::string& payload) {
  int rank = -1;
  Heartbeat hb;
  std::string error;
  if (!decode_heartbeat_frame(payload, c_.o.world_size, &rank, &hb, &error)) {
    c_.link->bad("from rank " + std::to_string(m.rank) + ": " + error);
    return;
  }
  if (rank != m.rank) {
    c_.link->bad("rank " + std::to_string(m.rank) + " sent one in another rank's name");
    return;
  }
  m.hb = std::move(hb);
  m.heard = true;
  m.heard_at = Clock::now();
}

// This leader's own entry is fresh (silent 0); a member's ages grow by the time since its
// heartbeat came, and that time is its silence. Members that said bye or went away are left
// out (their process ended, or the job does). At most kMaxHostBeats entries (members are capped
// at kMaxMembers, the same number).
HostBeats HostLeader::aggregate(Clock::time_point now) const {
  HostBeats b;
  b.leader = c_.o.rank;
  RankBeat self;
  self.rank = c_.o.rank;
  self.heard = c_.link->own(&self.hb);
  b.ranks.push_back(std::move(self));
  for (size_t i = 1; i < members_.size() && b.ranks.size() < kMaxHostBeats; ++i) {
    const Member& m = members_[i];
    if (m.rank < 0 || m.done) continue;
    RankBeat rb;
    rb.rank = m.rank;
    rb.heard = m.heard;
    if (m.heard) {
      rb.silent_ms = ms_since(m.heard_at, now);
      rb.hb = aged(m.hb, rb.silent_ms);
    }
    b.ranks.push_back(std::move(rb));
  }
  return b;
}

std::optional<TimedHostBeats> HostLeader::host_beats(Clock::time_point now) const {
  return TimedHostBeats{aggregate(now), now, std::chrono::milliseconds(2000)};
}

// Rank 0 is a member here: it gets the host's heartbeats over its socket, so that a single-host
// job needs no store at all for them, and rank 0 sees this leader stop (its aggregates stop).
// Every kHeartbeatEvery, and sooner when a rank of the host marked a step since the last one.
void HostLeader::send_beats(Clock::time_point now) {
  if (now < next_beats_look_) return;
  next_beats_look_ = now + kHeartbeatSoonest;
  Member* rank0 = nullptr;
  for (size_t i = 1; i < members_.size(); ++i) {
    if (members_[i].rank == 0 && members_[i].socket && !members_[i].done) rank0 = &members_[i];
  }
  if (rank0 == nullptr) return;
  HostBeats b = aggregate(now);
  int64_t marks = 0;
  for (const RankBeat& rb : b.ranks) marks += rb.hb.last_marked_step;
  if (now < next_beats_ && marks == sent_marks_) return;
  next_beats_ = now + kHeartbeatEvery;
  sent_marks_ = marks;
  std::string bytes;
  append_host_beats(b, &bytes);
  if (rank0->socket->queue(FrameType::kHostBeats, bytes, 1u << 20)) c_.counters->heartbeats_sent++;
}

// Rank 0 asked in ctl: tell this host's ranks once per episode, and answer each round once in
// the store (unless rank 0 is on this host: it has the aggregate already).
void HostLeader::answer_ask(const host::HangAsk& ask) {
  relay_hang(ask.episode);
  if (ask.round <= answered_round_) return;
  answered_round_ = ask.round;
  const bool rank0_here = std::any_of(members_.begin(), members_.end(),
                                      [](const Member& m) { return m.rank == 0 && !m.done; });
  if (rank0_here) return;
  HostBeats b = aggregate(Clock::now());
  b.round = ask.round;
  std::string bytes, error;
  append_host_beats(b, &bytes);
  if (c_.store->append(host::beats_key(c_.o, ask.round), bytes, &error)) {
    c_.counters->heartbeats_sent++;
  } else {
    c_.counters->store_errors++;  // said once, if the store is lost (kv_client.h)
  }
}

void HostLeader::relay_hang(uint64_t episode) {
  if (!c_.link->notice(episode)) return;
  std::string payload;
  runtime::wire::Writer(&payload).u64(episode);
  for (size_t i = 1; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.socket && !m.done && m.rank != 0) m.socket->queue(FrameType::kHang, payload, SIZE_MAX);
  }
}

void HostLeader::announce_hang(uint64_t episode) { relay_hang(episode); }

void HostLeader::announce_recording(const RecordingNotice& notice) {
  const std::string payload = host::recording_frame(notice);
  for (size_t i = 1; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.socket && !m.done && m.rank != 0) m.socket->queue(FrameType::kRecording, payload, SIZE_MAX);
  }
}

void HostLeader::relay_recording(const RecordingNotice& notice) {
  if (!c_.recording || !c_.recording->take(notice)) return;
  c_.counters->recording_notices++;
  announce_recording(notice);
}

}  // namespace sp::rank_pipeline
