#include "host_leader.h"

#include <algorithm>

#include "host_message.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline {
namespace {

// More local ranks than any machine has GPUs; a process that opens more connections is not ours.
constexpr size_t kMaxMembers = 1024;
constexpr size_t kFramesPerRead = 64;
constexpr auto kControlBeforeAck = std::chrono::milliseconds(50);
constexpr auto kControlWhileHeld = std::chrono::milliseconds(20);
constexpr auto kControlWhenIdle = std::chrono::milliseconds(5000);
constexpr auto kExpectedEvery = std::chrono::milliseconds(200);

}  // namespace

HostLeader::HostLeader(const TransportContext& c, std::unique_ptr<FrameListener> listener,
                       std::string host_key, TransportWarning* warning)
    : c_(c), listener_(std::move(listener)), host_key_(std::move(host_key)), warning_(warning),
      started_(Clock::now()),
      host_timeout_(c.o.host_timeout.count() > 0 ? c.o.host_timeout : c.o.step_timeout / 2) {
  members_.emplace_back();
  members_[0].rank = c_.o.rank;
  c_.counters->host_members = 1;
  if (!host_key_.empty()) expected_members_ = std::max(1, c_.o.local_world_size);
  next_expected_read_ = started_;
  last_control_read_ = started_ - kControlWhenIdle;
}

size_t HostLeader::open_limit() const { return static_cast<size_t>(c_.o.max_lag) + 4; }

// The step posting waits for: members behind it are read even when the leader holds its limit.
int64_t HostLeader::frontier() const {
  if (next_post_) return *next_post_;
  return slots_.empty() ? INT64_MAX : slots_.begin()->first;
}

bool HostLeader::wants_own() const {
  return !members_[0].done && (slots_.size() < open_limit() || members_[0].latest < frontier());
}

void HostLeader::offer_own(EncodedSummary&& summary) {
  take(members_[0], summary.step, std::move(summary.bytes));
}

void HostLeader::own_done() { members_[0].done = true; }

void HostLeader::take(Member& m, int64_t step, std::string bytes) {
  if (m.latest != INT64_MIN && step <= m.latest) {
    drop_member(m, "steps out of order (" + std::to_string(step) + " after " +
                       std::to_string(m.latest) + ")");
    return;
  }
  m.latest = step;
  if ((ack_ && step <= *ack_) || (next_post_ && step < *next_post_)) {
    c_.counters->summaries_late++;  // its step was posted (or given up) without it
    return;
  }
  Slot& slot = slots_[step];
  if (slot.summaries.empty()) slot.first_seen = Clock::now();
  slot.summaries.emplace_back(m.rank, std::move(bytes));
}

void HostLeader::drop_member(Member& m, const std::string& why) {
  if (m.socket) {
    (*warning_)("host leader: dropped the connection of " +
                (m.rank >= 0 ? "rank " + std::to_string(m.rank) : std::string("a local process")) +
                ": " + why);
  }
  m.done = true;
  m.left = true;
  m.socket.reset();
}

void HostLeader::accept_members() {
  if (!listener_) return;
  while (auto socket = listener_->accept()) {
    if (members_.size() >= kMaxMembers) continue;  // closed as it goes out of scope
    Member m;
    m.socket = std::move(socket);
    members_.push_back(std::move(m));
  }
}

bool HostLeader::read_member(Member& m) {
  std::vector<Frame> frames;
  std::string error;
  const bool open = m.socket->read(&frames, kFramesPerRead, &error);
  for (Frame& f : frames) {
    if (m.done) break;
    runtime::wire::Reader r(f.payload, 0);
    if (f.type == FrameType::kHello) {
      int32_t rank = -1;
      if (m.rank >= 0 || !r.i32(&rank) || rank < 0 || rank >= c_.o.world_size) {
        drop_member(m, "a malformed hello");
        continue;
      }
      m.rank = rank;
      c_.counters->host_members++;
      if (next_post_) joined_late_.push_back(rank);  // steps were posted without it
    } else if (f.type == FrameType::kSummary) {
      int64_t step = 0;
      if (m.rank < 0 || !r.i64(&step)) {
        drop_member(m, "a summary before its hello, or without a step");
        continue;
      }
      take(m, step, f.payload.substr(8));
    } else if (f.type == FrameType::kBye) {
      m.done = true;
      m.socket.reset();
    } else if (f.type == FrameType::kHeartbeat && m.rank >= 0) {
      take_heartbeat(m, f.payload);
    } else if (f.type == FrameType::kHang && m.rank == 0) {
      uint64_t episode = 0;
      if (r.u64(&episode)) relay_hang(episode);
    } else if (f.type == FrameType::kRecording && m.rank == 0) {
      if (const auto notice = host::parse_recording_frame(f.payload)) {
        relay_recording(*notice);
      } else {
        c_.counters->bad_recording_frames++;
      }
    } else {
      drop_member(m, "a frame only a leader sends");
    }
  }
  if (!open && !m.done) {
    if (error.empty()) {  // it closed without a bye: its process ended, or its socket did
      m.done = true;
      m.left = true;
      m.socket.reset();
    } else {
      drop_member(m, error);
    }
  }
  return !frames.empty() || !open;
}

bool HostLeader::pump(Clock::time_point now, bool stopping) {
  accept_members();
  bool progress = false;
  for (size_t i = 1; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.socket && (slots_.size() < open_limit() || m.latest < frontier())) {
      progress |= read_member(m);
    }
  }
  refresh_expected(now);
  read_control(now);
  declare_late_joiners();
  progress |= settle(now, stopping);
  send_beats(now);
  for (size_t i = 1; i < members_.size(); ++i) {  // stop frames waiting to go out
    std::string error;
    if (members_[i].socket && !members_[i].socket->outbox_empty()) {
      members_[i].socket->flush(&error);
    }
  }
  return progress;
}

int HostLeader::hello_count() const {
  int n = 0;
  for (const Member& m : members_) n += m.rank >= 0 ? 1 : 0;
  return n;
}

// The members registered in the store: read during the first connect_timeout and while some have
// not said hello yet. (A rank that registers after the leader's last read joins when it
// connects and is named missing in the steps posted before, declare_late_joiners().)
void HostLeader::refresh_expected(Clock::time_point now) {
  if (host_key_.empty() || now < next_expected_read_) return;
  if (now - started_ > c_.o.connect_timeout && hello_count() >= expected_members_) return;
  next_expected_read_ = now + kExpectedEvery;
  std::string error;
  if (const auto n = c_.store->add(host::members_key(c_.o, host_key_), 0, &error)) {
    expected_members_ = std::max<int64_t>(*n, c_.o.local_world_size);
  }
}

void HostLeader::read_control(Clock::time_point now) {
  const bool held = holding_;
  // Every max_lag/2 posts keeps the back-pressure (posts up to ack + max_lag); at most every 2
  // posts brings /control's pause to this host within two steps of rank 0 writing it (the
  // host's ranks take it at their next step mark): half a get per step at most.
  const int every = std::clamp(c_.o.max_lag / 2, 1, 2);
  const auto interval = !ack_ ? kControlBeforeAck : held ? kControlWhileHeld : kControlWhenIdle;
  const bool due = now - last_control_read_ >= interval ||
                   (ack_ && !held && posts_since_control_ >= every);
  if (!due) return;
  posts_since_control_ = 0;
  last_control_read_ = now;
  std::string error;
  const auto value = c_.store->try_get(host::ctl_key(c_.o), &error);
  if (!value) {
    if (!error.empty()) {
      c_.counters->store_errors++;  // said once, if the store is lost (kv_client.h)
    }
    return;
  }
  const host::Control control = host::parse_control(*value);
  if (control.stop) remote_stop_ = *control.stop;
  if (control.ask) answer_ask(*control.ask);
  if (control.recording) relay_recording(*control.recording);
  if (!control.ack) return;
  if (held) {  // the time held so far counts now, so that a long hold shows while it lasts
    c_.counters->held_back_ms += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - held_since_).count());
    held_since_ = now;
  }
  if (ack_ && *control.ack <= *ack_) return;
  ack_ = *control.ack;
  while (!slots_.empty() && slots_.begin()->first <= *ack_) {  // given up without this host
    c_.counters->summaries_late += slots_.begin()->second.summaries.size();
    slots_.erase(slots_.begin());
  }
  if (next_post_ && *next_post_ <= *ack_) next_post_ = *ack_ + 1;
  tell_posted(*ack_);
}

bool HostLeader::ready(int64_t step, Clock::time_point now, bool stopping) const {
  // The host timeout runs from when the step could be posted: not while rank 0 holds it back.
  const auto pending = slots_.lower_bound(step);
  if (pending != slots_.end() && eligible_since_ &&
      now - std::max(pending->second.first_seen, *eligible_since_) > host_timeout_) {
    return true;
  }
  // A registered rank that has not said hello yet is waited for (up to the host timeout), also
  // while stopping as long as it may still be connecting: a job that ends right after it
  // started would otherwise post its first steps without the members still on their way.
  if (hello_count() < expected_members_ && (!stopping || now - started_ <= c_.o.connect_timeout)) {
    return false;
  }
  for (const Member& m : members_) {
    if (m.done) continue;
    if (m.rank < 0 || m.latest < step) return false;
  }
  return true;
}

// The step this host posts next: once posting started, the one after the last; before, the
// step after rank 0's ack, once any of its ranks sent a step (a host that starts later than the
// others posts the steps before its first one with its ranks missing, so that rank 0 does not
// wait for it there).
std::optional<int64_t> HostLeader::candidate() const {
  if (next_post_) return next_post_;
  if (slots_.empty()) return std::nullopt;
  return std::min(*ack_ + 1, slots_.begin()->first);
}

bool HostLeader::settle(Clock::time_point now, bool stopping) {
  bool progress = false;
  while (ack_) {
    const std::optional<int64_t> step = candidate();
    if (!step) break;
    if (!stopping && *step > *ack_ + c_.o.max_lag) {
      if (!holding_) held_since_ = now;
      holding_ = true;
      break;
    }
    holding_ = false;
    if (!eligible_since_) eligible_since_ = now;
    bool later = !slots_.empty() && slots_.rbegin()->first >= *step;
    for (const Member& m : members_) later = later || m.latest > *step;
    if (!later || !ready(*step, now, stopping)) break;
    post(*step);
    progress = true;
  }
  return progress;
}

void HostLeader::post(int64_t step) {
  HostMessage message;
  message.step = step;
  message.leader = c_.o.rank;
  if (auto it = slots_.find(step); it != slots_.end()) {
    message.summaries = std::move(it->second.summaries);
    slots_.erase(it);
  }
  for (const Member& m : members_) {
    // A member that left without a bye is not covered: if its process lives on, it posts as a
    // host of its own (host_member.h), and rank 0 must wait for that, not settle without it.
    if (m.rank < 0 || m.left) continue;
    const bool present = std::any_of(message.summaries.begin(), message.summaries.end(),
                                     [&](const auto& s) { return s.first == m.rank; });
    if (!present) message.missing.push_back(m.rank);
  }
  std::string bytes;
  append_host_message(message, &bytes);
  const auto covered = static_cast<int64_t>(message.summaries.size() + message.missing.size());
  std::string error;
  if (c_.store->append(host::data_key(c_.o, step), bytes, &error) &&
      c_.store->add(host::count_key(c_.o, step), covered, &error)) {
    c_.counters->host_messages_sent++;
    c_.counters->summaries_sent += message.summaries.size();
    c_.counters->bytes_sent += bytes.size();
  } else {
    c_.counters->store_errors++;  // said once, if the store is lost (kv_client.h)
  }
  next_post_ = step + 1;
  eligible_since_.reset();
  ++posts_since_control_;
  tell_posted(step);
}

// A rank that said hello after this host posted steps is not in them: it is declared missing
// there, so that rank 0 does not wait for it (the steps rank 0 may still be waiting for: after
// its ack, up to the last one posted).
void HostLeader::declare_late_joiners() {
  if (joined_late_.empty() || !next_post_ || !ack_) return;
  for (int64_t step = *ack_ + 1; step < *next_post_; ++step) {
    HostMessage message;
    message.step = step;
    message.leader = c_.o.rank;
    message.missing = joined_late_;
    std::string bytes;
    append_host_message(message, &bytes);
    std::string error;
    if (!c_.store->append(host::data_key(c_.o, step), bytes, &error) ||
        !c_.store->add(host::count_key(c_.o, step), static_cast<int64_t>(joined_late_.size()), &error)) {
      c_.counters->store_errors++;  // said once, if the store is lost (kv_client.h)
      break;
    }
  }
  joined_late_.clear();
}

// The members' in-flight window moves on: every step up to `step` is posted or given up.
void HostLeader::tell_posted(int64_t step) {
  std::string payload;
  runtime::wire::Writer(&payload).i64(step);
  for (Member& m : members_) {
    if (m.socket && !m.done) m.socket->queue(FrameType::kPosted, payload, SIZE_MAX);
  }
}

void HostLeader::give_up_all() {
  while (!slots_.empty()) {
    next_post_ = slots_.begin()->first;
    post(*next_post_);
  }
}

bool HostLeader::finished() const {
  if (!slots_.empty()) return false;
  return std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.done; });
}

void HostLeader::broadcast_stop(const std::string& why) {
  for (Member& m : members_) {
    if (!m.socket) continue;
    std::string error;
    m.socket->queue(FrameType::kStop, why, SIZE_MAX);
    m.socket->flush(&error);
  }
}

void HostLeader::fds(std::vector<int>* out) const {
  if (listener_) out->push_back(listener_->fd());
  for (const Member& m : members_) {
    if (m.socket) out->push_back(m.socket->fd());
  }
}

}  // namespace sp::rank_pipeline
