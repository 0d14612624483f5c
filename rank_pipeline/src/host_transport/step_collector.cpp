#include "step_collector.h"

#include <algorithm>
#include <limits>

#include "host/host_keys.h"

namespace sp::rank_pipeline {
namespace {

constexpr auto kFirstPoll = std::chrono::milliseconds(2);
constexpr auto kControlWhenIdle = std::chrono::milliseconds(1000);
// A step still short of ranks this long after rank 0's own summary: look whether a later step
// already covers everyone (far longer than the hosts take to post a step; far shorter than the
// step timeout).
constexpr auto kOvertakeAfter = std::chrono::milliseconds(500);
constexpr auto kTableEvery = std::chrono::milliseconds(1000);
constexpr auto kTableFirstEvery = std::chrono::milliseconds(100);
// Rows that never come (a rank whose probe did not start) are not waited for forever.
constexpr auto kTableGiveUp = std::chrono::seconds(120);
// The host protocol's own reason: a whole step without some ranks' bytes (step_assembly.h has
// the others).
const std::string kPostedWithout = " (their host's leader sent the step without them)";

online::AssemblyLimits assembly_limits(const TransportOptions& o) {
  online::AssemblyLimits limits;
  limits.world_size = o.world_size;
  // One step is waited for at a time, and a later whole step is already "moved past" here (the
  // hosts post in order): only the timeout is left to decide.
  limits.incomplete_lag_steps = std::numeric_limits<int>::max();
  limits.max_pending_steps = std::numeric_limits<int>::max();
  limits.step_timeout = o.step_timeout;
  return limits;
}

}  // namespace

StepCollector::StepCollector(const TransportContext& c, TransportWarning* warning)
    : c_(c), warning_(warning), limits_(assembly_limits(c.o)), ack_(c.o.first_step - 1), poll_interval_(kFirstPoll),
      table_(static_cast<size_t>(c.o.world_size)) {}

// Counted; a store that keeps failing is said once, when lost (kv_client.h).
void StepCollector::store_error(const std::string&) { c_.counters->store_errors++; }

void StepCollector::start() { publish_ack(); }

void StepCollector::note_own(int64_t step) {
  if (own_latest_ == INT64_MIN && step > next()) {
    // The transport started after first_step: nothing before rank 0's first summary is waited
    // for (the hosts learn it from the ack). What hosts posted before it (at most max_lag steps
    // after the first ack) is deleted.
    for (int64_t s = next(); s < step && s <= ack_ + 1 + c_.o.max_lag; ++s) {
      std::string error;
      c_.store->remove(host::data_key(c_.o, s), &error);
      c_.store->remove(host::count_key(c_.o, s), &error);
    }
    ack_ = step - 1;
    publish_ack();
  }
  own_latest_ = std::max(own_latest_, step);
}

void StepCollector::set_hang_ask(std::optional<host::HangAsk> ask) {
  hang_ask_ = ask;
  publish_ack();
}

void StepCollector::set_recording(const RecordingNotice& notice) {
  recording_ = notice;
  publish_ack();
}

void StepCollector::publish_ack() {
  last_control_ = Clock::now();
  const std::string value = host::control_value(ack_, hang_ask_, recording_);
  std::string error;
  const auto now = c_.store->compare_set(host::ctl_key(c_.o), ctl_value_, value, &error);
  if (!now) return store_error(error);
  if (*now == value) {
    ctl_value_ = value;
    return;
  }
  const host::Control control = host::parse_control(*now);
  if (control.stop) {
    remote_stop_ = *control.stop;
    return;
  }
  // Not ours (a stale value from before a restart of this session?): take it over.
  if (!c_.store->set(host::ctl_key(c_.o), value, &error)) return store_error(error);
  ctl_value_ = value;
}

void StepCollector::publish_stop(const std::string& why) {
  std::string error;
  c_.store->set(host::ctl_key(c_.o), host::stop_value(why), &error);
}

// While no step settles (no ack, whose answer would show it), a stop another rank wrote to ctl
// is looked for once a second.
void StepCollector::watch_control(Clock::time_point now) {
  if (now - last_control_ < kControlWhenIdle) return;
  last_control_ = now;
  std::string error;
  const auto value = c_.store->try_get(host::ctl_key(c_.o), &error);
  if (!value) {
    if (!error.empty()) store_error(error);
    return;
  }
  if (const host::Control control = host::parse_control(*value); control.stop) {
    remote_stop_ = *control.stop;
  }
}

bool StepCollector::pump(Clock::time_point now) {
  read_rank_table(now);
  watch_control(now);
  bool progress = false;
  while (!remote_stop_ && own_latest_ != INT64_MIN && next() <= own_latest_) {
    if (next() <= final_through_) {  // a later step covers every rank: this one is as whole as it gets
      settle(next(), std::string(online::kMovedPastReason));
      progress = true;
      continue;
    }
    if (!waiting_since_) {
      waiting_since_ = now;
      next_poll_ = now + kFirstPoll;  // the hosts post a little after rank 0's own summary
      poll_interval_ = kFirstPoll;
    }
    if (now < next_poll_) break;
    std::string error;
    const auto covered = c_.store->add(host::count_key(c_.o, next()), 0, &error);
    if (!covered) {
      store_error(error);
      next_poll_ = now + c_.o.max_poll;
      break;
    }
    std::string given_up;  // the reason's tail when the step is not whole (step_assembly.h)
    if (*covered < c_.o.world_size) {
      online::OpenStep open;
      open.step = next();
      open.waited = now - *waiting_since_;
      std::optional<std::string> reason = online::give_up_reason(limits_, open);
      if (!reason && overtaken(now)) {
        open.missing_moved_past = true;
        reason = online::give_up_reason(limits_, open);
      }
      if (!reason) {
        next_poll_ = now + poll_interval_;
        poll_interval_ = std::min(c_.o.max_poll, poll_interval_ * 2);
        break;
      }
      given_up = std::move(*reason);
    }
    settle(next(), given_up);  // whole, or given up: fill() tells whether every rank's bytes came
    progress = true;
  }
  return progress;
}

// Every host posts its steps in order, so once a later step covers every rank, no host will add
// to an earlier one: the rank missing there (it joined late, or skipped it) is not waited for.
// Checked on rank 0's newest step, and only once the step waited has taken a while.
bool StepCollector::overtaken(Clock::time_point now) {
  if (own_latest_ <= next() || now - *waiting_since_ < kOvertakeAfter) return false;
  std::string error;
  const auto covered = c_.store->add(host::count_key(c_.o, own_latest_), 0, &error);
  if (!covered || *covered < c_.o.world_size) return false;
  final_through_ = own_latest_ - 1;
  return true;
}

void StepCollector::settle(int64_t step, const std::string& given_up) {
  std::string error;
  const auto data = c_.store->try_get(host::data_key(c_.o, step), &error);
  if (!error.empty()) store_error(error);
  c_.store->remove(host::data_key(c_.o, step), &error);
  c_.store->remove(host::count_key(c_.o, step), &error);
  std::vector<HostMessage> messages;
  if (data && !parse_host_messages(*data, &messages, &error)) {
    c_.counters->bad_host_messages++;
    (*warning_)("step " + std::to_string(step) + ": " + error);
  }
  StepBatch batch;
  batch.step = step;
  fill(messages, step, given_up, &batch);
  // The rows are written at start, before any summary: the first steps bring the whole table.
  if (rows_known_ < c_.o.world_size) {
    next_table_read_ = std::min(next_table_read_, Clock::now());
    read_rank_table(Clock::now());
  }
  (batch.complete ? c_.counters->steps_complete : c_.counters->steps_incomplete)++;
  if (table_changed_) {
    batch.rank_table = std::make_shared<const std::vector<RankInfo>>(table_);
    table_changed_ = false;
  }
  ack_ = step;
  waiting_since_.reset();
  c_.deliver(std::move(batch));
  publish_ack();
}

void StepCollector::fill(const std::vector<HostMessage>& messages, int64_t step,
                         const std::string& given_up, StepBatch* batch) {
  batch->by_rank.assign(static_cast<size_t>(c_.o.world_size), std::string());
  for (const HostMessage& m : messages) {
    if (m.step != step) {
      c_.counters->bad_host_messages++;
      (*warning_)("a host message of step " + std::to_string(m.step) + " under step " +
                  std::to_string(step));
      continue;
    }
    for (const auto& [rank, bytes] : m.summaries) {
      if (rank < 0 || rank >= c_.o.world_size || bytes.empty() ||
          !batch->by_rank[static_cast<size_t>(rank)].empty()) {
        c_.counters->bad_host_messages++;
        (*warning_)("step " + std::to_string(step) + ": the message of leader rank " +
                    std::to_string(m.leader) + " has a summary of rank " + std::to_string(rank) +
                    " that is outside the world, empty, or another host's too");
        continue;
      }
      batch->by_rank[static_cast<size_t>(rank)] = bytes;
      c_.counters->summaries_received++;
      c_.counters->bytes_received += bytes.size();
    }
  }
  std::vector<int> missing;
  for (int r = 0; r < c_.o.world_size; ++r) {
    if (!batch->by_rank[static_cast<size_t>(r)].empty()) continue;
    missing.push_back(r);
    if (!batch->missing.empty()) batch->missing += ",";
    batch->missing += std::to_string(r);
  }
  batch->complete = missing.empty();
  // A whole counter with ranks missing: their host's leader posted the step without them (it
  // stopped waiting for them, or they joined later; host_leader.cpp), or their bytes were
  // refused above (warned). Either way nothing more comes for them.
  if (!batch->complete) {
    batch->why_incomplete = online::why_incomplete(missing, given_up.empty() ? kPostedWithout : given_up);
  }
}

void StepCollector::give_up_all() {
  while (!remote_stop_ && own_latest_ != INT64_MIN && next() <= own_latest_) {
    settle(next(), std::string(online::kEndOfRunReason));
  }
}

void StepCollector::read_rank_table(Clock::time_point now) {
  if (rows_known_ >= c_.o.world_size || now < next_table_read_) return;
  if (!first_table_read_) first_table_read_ = now;
  if (now - *first_table_read_ > kTableGiveUp) {
    (*warning_)("rank table: " + std::to_string(c_.o.world_size - rows_known_) +
                " rank(s) never sent their row; verdicts name no host for them");
    rows_known_ = c_.o.world_size;  // stop reading
    return;
  }
  next_table_read_ = now + (rows_known_ == 0 ? kTableFirstEvery : kTableEvery);
  std::string error;
  const auto rows = c_.store->try_get(host::ranks_key(c_.o), &error);
  if (!rows) {
    if (!error.empty()) store_error(error);
    return;
  }
  if (parse_rank_rows(*rows, &table_, &error) != 0) {
    c_.counters->bad_host_messages++;
    (*warning_)(error);
  }
  const int known = static_cast<int>(
      std::count_if(table_.begin(), table_.end(), [](const RankInfo& r) { return !r.host.empty(); }));
  table_changed_ = table_changed_ || known != rows_known_;
  rows_known_ = known;
}

}  // namespace sp::rank_pipeline
