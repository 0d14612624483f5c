#include "hang_watch.h"

#include <algorithm>
#include <vector>

#include "host/heartbeat_link.h"
#include "host/host_keys.h"
#include "straggler_probe/output_line.h"

namespace sp::rank_pipeline {

using runtime::print_line;
namespace {

double seconds_of(int64_t ms) { return static_cast<double>(ms) / 1e3; }

int64_t ms_between(HangWatch::Clock::time_point a, HangWatch::Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

}  // namespace

HangWatch::HangWatch(const TransportContext& c, StepCollector* collector)
    : c_(c), collector_(collector) {
  if (c_.o.hang_board) {
    c_.o.hang_board->set_settings(seconds_of(c_.o.hang_after.count()), c_.o.hang_multiple);
  }
}

// Never under the time silence takes to show (a heartbeat period past kSilentAfter): before
// that, a frozen rank would be named behind, from a heartbeat of a moment before it stopped.
std::chrono::milliseconds HangWatch::bound() const {
  const auto floor = std::max<std::chrono::milliseconds>(
      c_.o.hang_after, std::chrono::duration_cast<std::chrono::milliseconds>(kSilentAfter + kHeartbeatEvery));
  return hang_bound_of(floor, c_.o.hang_multiple, step_ms_);
}

// No step known: nothing says how long a step takes (a job of 20 s steps is no hang at 10 s), so
// 3 x the floor. One or two: the largest of them stands in for the typical step, its multiple
// no lower than the floor; a fast job's freeze in its first second then gets the floor (10 s),
// not 30 s, while a slow job's first steps raise the bound above the floor at once. A short
// step among them only ever lowers it to the floor, and a long step that keeps every rank busy
// opens nothing (pump). From kMinSteps on: the median.
std::chrono::milliseconds hang_bound_of(std::chrono::milliseconds floor, double multiple,
                                        const std::deque<int64_t>& step_ms) {
  if (step_ms.empty()) return floor * 3;
  std::vector<int64_t> sorted(step_ms.begin(), step_ms.end());
  std::sort(sorted.begin(), sorted.end());
  const int64_t typical = sorted.size() < HangWatch::kMinSteps ? sorted.back() : sorted[sorted.size() / 2];
  return std::max(floor, std::chrono::milliseconds(static_cast<int64_t>(multiple * static_cast<double>(typical))));
}

// Rank 0's step times, from its own marks (the warm-up steps left out: compilation, allocator
// warm-up and DDP's bucket rebuild are no typical step).
void HangWatch::learn(const Heartbeat& own, Clock::time_point now) {
  if (own.mark_age_ms < 0 || own.last_marked_step == last_step_) return;
  const Clock::time_point marked = now - std::chrono::milliseconds(own.mark_age_ms);
  if (last_step_ != INT64_MIN && own.last_marked_step > last_step_ &&
      last_step_ + 1 >= c_.o.first_step) {
    step_ms_.push_back(ms_between(last_mark_at_, marked) / (own.last_marked_step - last_step_));
    while (step_ms_.size() > kStepWindow) step_ms_.pop_front();
  }
  last_step_ = own.last_marked_step;
  last_mark_at_ = marked;
}

JobView HangWatch::look(Clock::time_point now, HostRole& role, const Heartbeat& own) const {
  ViewInput in;
  in.world_size = c_.o.world_size;
  in.self = c_.o.rank;
  in.own = own;
  in.now = now;
  in.silent_after = kSilentAfter;
  if (auto mine = role.host_beats(now)) in.hosts.push_back(std::move(*mine));
  for (const auto& [leader, answer] : answers_) in.hosts.push_back(answer.beats);
  return build_view(in);
}

void HangWatch::pump(Clock::time_point now, HostRole& role, bool stopping) {
  if (c_.o.hang_after.count() <= 0 || c_.o.world_size < 2 || now < next_look_) return;
  next_look_ = now + kLookEvery;
  Heartbeat own;
  if (!c_.link->own(&own)) return;  // no runtime heartbeat: nothing to hold the others against
  learn(own, now);
  if (ep_ && stopping) return close(now, false);
  if (!ep_ && (stopping || last_step_ == INT64_MIN)) return;
  if (ep_ && ep_->need_remote) read_answers(now);
  const JobView v = look(now, role, own);
  if (ep_) return follow(v, now);
  // After an episode the stall is counted from its end: the ranks that waited have not marked
  // a step yet when the silent one comes back, and that is no new hang.
  const int64_t since_last = rearmed_ ? ms_between(*rearmed_, now) : INT64_MAX;
  if (std::min(v.stalled_ms, since_last) > bound().count() && !v.busy) open(v, now, role);
}

void HangWatch::open(const JobView& v, Clock::time_point now, HostRole& role) {
  ep_.emplace();
  Episode& e = *ep_;
  e.record.id = ++episodes_;
  e.record.step = v.incomplete_step;
  e.record.bound_s = seconds_of(bound().count());
  e.opened = now;
  e.stalled_at_open_ms = v.stalled_ms;
  e.need_remote = needs_other_hosts(v);
  e.first_due = e.need_remote ? now + kAnswerWait : now;
  role.announce_hang(e.record.id);  // this host's ranks (a leader also notes it for itself)
  c_.link->notice(e.record.id);
  if (e.need_remote) next_round(now);
}

// Ranks nothing is known of that are not on rank 0's host (their leader is another one, or not
// known yet): only the store can tell about them. (Rank 0's own host tells over its socket; if
// its leader went silent, asking the store would not help.)
bool HangWatch::needs_other_hosts(const JobView& v) const {
  const std::vector<RankInfo>& table = collector_->rank_table();
  const int my_leader = table.empty() || table[0].host.empty() ? -1 : table[0].leader;
  for (int r : v.unseen) {
    const RankInfo& row = table[static_cast<size_t>(r)];
    if (row.host.empty() || my_leader < 0 || row.leader != my_leader) return true;
  }
  return false;
}

void HangWatch::follow(const JobView& v, Clock::time_point now) {
  Episode& e = *ep_;
  // The step completed on every rank seen (what is held of unseen ranks may be steps old), and
  // nobody is silent (a silent rank's last heartbeat proves nothing about now).
  if (v.silent.empty() && v.incomplete_step > e.record.step) return close(now, true);
  if (e.need_remote && now >= e.next_round) next_round(now);
  if (!e.printed) {
    if (now >= e.first_due || v.all_seen()) say(HangLineKind::kSuspected, v);
  } else if (v.stalled_ms >= e.next_line_ms) {
    say(HangLineKind::kStill, v);
  }
  show(v, now);
}

// The metrics' picture of the episode, at every look (not only when a line is said: a scrape
// between two lines, which grow seconds apart, sees who is silent now). A copy of a few ranks
// into the board, on this thread, only while an episode that was said is open.
void HangWatch::show(const JobView& v, Clock::time_point now) const {
  if (!c_.o.hang_board || !ep_ || !ep_->printed) return;
  const Episode& e = *ep_;
  OpenHang open;
  open.id = e.record.id;
  open.step = e.record.step;
  open.bound_s = e.record.bound_s;
  open.lines = e.record.lines;
  open.stalled_since = e.opened - std::chrono::milliseconds(e.stalled_at_open_ms);
  open.looked = now;
  open.ranks = hang_ranks(v, collector_->rank_table(), kNamedPerKind);
  open.silent = v.silent.size();
  open.behind = v.behind.size();
  open.unseen = v.unseen.size();
  open.waiting = v.waiting.size();
  c_.o.hang_board->show_open(std::move(open));
}

void HangWatch::say(HangLineKind kind, const JobView& v) {
  Episode& e = *ep_;
  const std::vector<RankInfo>& table = collector_->rank_table();
  const std::string line =
      hang_line(kind, v, table, e.record.step, seconds_of(v.stalled_ms), e.record.bound_s);
  if (c_.o.hang_print) {
    c_.o.hang_print(line);
  } else {
    print_line(line);
  }
  c_.counters->hang_lines++;
  e.record.lines++;
  e.record.last_line = line;
  if (!e.printed) {
    e.printed = true;
    e.named = named_summary(v);
    e.record.first_line = line;
    e.record.named = named_json(v, table);
    e.record.waiting = static_cast<int>(v.waiting.size());
    e.record.detected_after_s = seconds_of(v.stalled_ms);
  }
  e.next_line_ms = 2 * std::max<int64_t>(v.stalled_ms, static_cast<int64_t>(e.record.bound_s * 1e3));
  record();
}

// resumed: the step completed on every rank (a last line, when a first one was said); else the
// job ends with the episode open, kept as unresolved.
void HangWatch::close(Clock::time_point now, bool resumed) {
  Episode& e = *ep_;
  const int64_t took_ms = e.stalled_at_open_ms + ms_between(e.opened, now);
  if (resumed) {
    e.record.resumed = true;
    e.record.duration_s = seconds_of(took_ms);
    if (e.printed) {
      const std::string line = resumed_line(e.record.step, e.record.duration_s, e.named);
      c_.o.hang_print ? c_.o.hang_print(line) : print_line(line);
      c_.counters->hang_lines++;
      e.record.lines++;
      e.record.last_line = line;
    }
  }
  if (e.printed) record();  // an episode nobody was told of is not one
  if (e.round > 0) {
    collector_->set_hang_ask(std::nullopt);
    std::string error;
    c_.store->remove(host::beats_key(c_.o, e.round), &error);
  }
  if (c_.o.hang_board) c_.o.hang_board->clear_open();
  answers_.clear();
  ep_.reset();
  rearmed_ = now;
}

// A new round: the leaders answer again at their next ctl read, so that the heartbeats rank 0
// holds of other hosts stay within a round of now. The previous round's key goes.
void HangWatch::next_round(Clock::time_point now) {
  Episode& e = *ep_;
  if (e.round > 0) {
    std::string error;
    c_.store->remove(host::beats_key(c_.o, e.round), &error);
  }
  ++e.round;
  collector_->set_hang_ask(host::HangAsk{e.record.id, e.round});
  e.next_round = now + kRoundEvery;
  e.next_read = now + kReadEvery;
}

void HangWatch::read_answers(Clock::time_point now) {
  Episode& e = *ep_;
  if (now < e.next_read || e.round == 0) return;
  e.next_read = now + kReadEvery;
  std::string error;
  const auto bytes = c_.store->try_get(host::beats_key(c_.o, e.round), &error);
  if (!bytes) {
    if (!error.empty()) c_.counters->store_errors++;
    return;
  }
  std::vector<HostBeats> hosts;
  if (!parse_host_beats(*bytes, c_.o.world_size, &hosts, &error)) {
    c_.link->bad("in the store's answers to rank 0: " + error);
  }
  for (HostBeats& b : hosts) {
    Answer& a = answers_[b.leader];
    if (b.round <= a.round) continue;  // taken when it first came: its ages count from then
    a.round = b.round;
    a.beats = TimedHostBeats{std::move(b), now, kAnswerStaleAfter};
  }
}

void HangWatch::record() const {
  if (c_.o.hang_board && ep_) c_.o.hang_board->record(ep_->record);
}

}  // namespace sp::rank_pipeline
