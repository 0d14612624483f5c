// StepAssembler: the one owner of "this step is complete / given up".
//
// The decision has one owner, in two pieces: the rules (give_up_reason: when a step that is not
// whole is given up, checked in one order) and their words (why_incomplete: "no summary from
// rank(s) 3 by step 9", the rank list bounded). Every path that turns per-rank summaries into
// whole steps decides through them:
//   - StepAssembler below, which keeps the payloads: rank 0's per-rank collector
//     (rank_pipeline/src/transport/per_rank_collector.cpp, payload = encoded bytes),
//     OnlineAnalyzer::add (decoded summaries) and `analyze-dir` (summary files);
//   - the host-aggregated protocol's collector (rank_pipeline/src/host_transport/
//     step_collector.cpp), which decides on the hosts' counter of a step in the store before it
//     reads the step's bytes at all (one get per step, so it never holds payloads): it asks
//     give_up_reason with what the counters tell it (a later step whole: the missing ranks moved
//     past, as its hosts post in order) and words its batch with why_incomplete.
// StepAssembler keeps each pending step's per-rank payloads and closes steps strictly in step
// order, each either complete (every rank's payload) or given up with one reason naming the
// missing ranks. A step is given up, checked in this order, when
//   - every missing rank has moved past it (rank_moved_to: that rank skipped the step),
//   - a step `incomplete_lag_steps` later is complete (a late summary is not waited for forever),
//   - more than `max_pending_steps` steps are pending (memory stays bounded; the oldest goes),
//   - it has waited `step_timeout` since its first summary (0: never),
//   - or the run ends (take_all).
// Closing in step order keeps the analysis's sliding window in time order and makes "closed"
// one number (last_closed): a payload for a step at or before it is late.
//
// Header-only and payload-agnostic so that the transport can use it on bytes without depending on
// the analysis. Not thread-safe: one thread drives an instance.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sp::online {

struct AssemblyLimits {
  int world_size = 1;
  int incomplete_lag_steps = 4;
  int max_pending_steps = 16;
  std::chrono::milliseconds step_timeout{0};  // 0: no time limit
};

enum class Arrival { kAccepted, kDuplicate, kLate, kBadRank };

template <class Payload>
struct ClosedStep {
  int64_t step = 0;
  std::vector<std::optional<Payload>> by_rank;  // index = rank
  bool complete = false;
  std::string problem;         // first problem noted for this step (note_problem); "" when none
  std::string why_incomplete;  // "no summary from rank(s) 3 by step 9" when !complete
  std::vector<int> missing;    // ranks without a payload
};

// "60" or "2.5": a limit in seconds, to a tenth.
inline std::string seconds_text(std::chrono::milliseconds d) {
  const int64_t tenths = (std::max<int64_t>(0, d.count()) + 50) / 100;
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on the
  // concatenation of temporaries once this is inlined into a template's caller.
  std::string out = std::to_string(tenths / 10);
  if (tenths % 10 != 0) {
    out += '.';
    out += static_cast<char>('0' + tenths % 10);
  }
  return out;
}

// "1,3,7" for at most 8 ranks, then ",... (N ranks)".
inline std::string rank_list_text(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > 8) out += ",... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

// The two reasons a caller may give without asking give_up_reason: the missing ranks are known
// to send nothing more (give_up_reason's first rule, which the host-aggregated collector also
// learns from a whole later step), and the run ended (take_all).
inline constexpr std::string_view kMovedPastReason = " (those ranks skipped it)";
inline constexpr std::string_view kEndOfRunReason = "at the end of the run";

// What is known of a step that is not whole, from whichever side holds it.
struct OpenStep {
  int64_t step = 0;
  bool missing_moved_past = false;           // every missing rank sends nothing more for it
  std::optional<int64_t> newest_complete;    // the newest step known complete, if any
  size_t pending_steps = 1;                  // steps waiting, this one included
  std::chrono::steady_clock::duration waited{};  // since its first summary
};

// The one rule of giving a step up: nullopt to wait on, else the reason's tail after the
// missing ranks (" (those ranks skipped it)", " by step 9", ...), checked in the order above.
inline std::optional<std::string> give_up_reason(const AssemblyLimits& limits, const OpenStep& s) {
  if (s.missing_moved_past) return std::string(kMovedPastReason);
  if (s.newest_complete && *s.newest_complete - s.step >= std::max(1, limits.incomplete_lag_steps)) {
    return " by step " + std::to_string(*s.newest_complete);
  }
  if (static_cast<int>(s.pending_steps) > std::max(1, limits.max_pending_steps)) {
    return " (more than " + std::to_string(std::max(1, limits.max_pending_steps)) + " steps pending)";
  }
  if (limits.step_timeout.count() > 0 && s.waited > limits.step_timeout) {
    return " within " + seconds_text(limits.step_timeout) + " s";
  }
  return std::nullopt;
}

// What a given-up step's line says: "no summary from rank(s) 1,3 by step 9". `tail` is
// give_up_reason's, or a reason of the caller's own ("at the end of the run").
inline std::string why_incomplete(const std::vector<int>& missing, const std::string& tail) {
  std::string out = "no summary from rank(s) " + rank_list_text(missing);
  if (!tail.empty() && tail.front() != ' ') out += ' ';
  out += tail;
  return out;
}

template <class Payload>
class StepAssembler {
 public:
  using Clock = std::chrono::steady_clock;
  using Closed = ClosedStep<Payload>;

  explicit StepAssembler(AssemblyLimits limits) : limits_(limits) {
    limits_.world_size = std::max(1, limits_.world_size);
    limits_.incomplete_lag_steps = std::max(1, limits_.incomplete_lag_steps);
    limits_.max_pending_steps = std::max(1, limits_.max_pending_steps);
    next_step_.assign(static_cast<size_t>(limits_.world_size), std::numeric_limits<int64_t>::min());
  }

  const AssemblyLimits& limits() const { return limits_; }

  bool is_late(int64_t step) const { return last_closed_ && step <= *last_closed_; }

  Arrival put(int64_t step, int rank, Payload payload, Clock::time_point now = Clock::now()) {
    if (is_late(step)) return Arrival::kLate;
    if (rank < 0 || rank >= limits_.world_size) return Arrival::kBadRank;
    Pending& p = open(step, now);
    auto& slot = p.by_rank[static_cast<size_t>(rank)];
    if (slot) return Arrival::kDuplicate;
    slot = std::move(payload);
    if (++p.received == limits_.world_size) {
      newest_complete_ = newest_complete_ ? std::max(*newest_complete_, step) : step;
    }
    return Arrival::kAccepted;
  }

  // A summary of `step` was unusable (wrong rank or world): the step is skipped as malformed.
  void note_problem(int64_t step, const std::string& problem, Clock::time_point now = Clock::now()) {
    if (is_late(step)) return;
    Pending& p = open(step, now);
    if (p.problem.empty()) p.problem = problem;
  }

  // `rank` sends nothing more for steps before `next_step` (the ones it did not send, it skipped).
  void rank_moved_to(int rank, int64_t next_step) {
    if (rank < 0 || rank >= limits_.world_size) return;
    int64_t& n = next_step_[static_cast<size_t>(rank)];
    n = std::max(n, next_step);
  }

  // Closes, oldest first, every step that is complete or given up; stops at the first that is
  // neither (later ones wait for it).
  std::vector<Closed> take_ready(Clock::time_point now = Clock::now()) {
    std::vector<Closed> out;
    while (!pending_.empty()) {
      auto it = pending_.begin();
      std::string why;
      if (!ready(it->first, &it->second, now, &why)) break;
      out.push_back(close(it, std::move(why)));
    }
    return out;
  }

  // End of the run: every pending step, complete or given up "at the end of the run".
  std::vector<Closed> take_all(const std::string& why = std::string(kEndOfRunReason)) {
    std::vector<Closed> out;
    while (!pending_.empty()) out.push_back(close(pending_.begin(), why));
    return out;
  }

  bool empty() const { return pending_.empty(); }
  size_t pending() const { return pending_.size(); }
  std::optional<int64_t> last_closed() const { return last_closed_; }

 private:
  struct Pending {
    std::vector<std::optional<Payload>> by_rank;
    int received = 0;
    // Ranks below this one have sent their payload or moved past the step. Both only ever
    // become true, so the scan for "every missing rank moved past" resumes here: checking after
    // each of N arrivals costs O(N) per step in all, not O(N) each.
    size_t settled = 0;
    std::string problem;
    Clock::time_point first_seen;
  };

  Pending& open(int64_t step, Clock::time_point now) {
    Pending& p = pending_[step];
    if (p.by_rank.empty()) {
      p.by_rank.resize(static_cast<size_t>(limits_.world_size));
      p.first_seen = now;
    }
    return p;
  }

  // Complete, or given up (then *why is the reason's tail, after the missing ranks).
  bool ready(int64_t step, Pending* pending, Clock::time_point now, std::string* why) const {
    Pending& p = *pending;
    if (p.received == limits_.world_size) return true;
    while (p.settled < p.by_rank.size() && (p.by_rank[p.settled] || next_step_[p.settled] > step)) ++p.settled;
    OpenStep open;
    open.step = step;
    open.missing_moved_past = p.settled == p.by_rank.size();
    open.newest_complete = newest_complete_;
    open.pending_steps = pending_.size();
    open.waited = now - p.first_seen;
    std::optional<std::string> reason = give_up_reason(limits_, open);
    if (!reason) return false;
    *why = std::move(*reason);
    return true;
  }

  Closed close(typename std::map<int64_t, Pending>::iterator it, std::string why) {
    Closed c;
    c.step = it->first;
    c.complete = it->second.received == limits_.world_size;
    c.problem = std::move(it->second.problem);
    c.by_rank = std::move(it->second.by_rank);
    for (size_t r = 0; r < c.by_rank.size(); ++r) {
      if (!c.by_rank[r]) c.missing.push_back(static_cast<int>(r));
    }
    if (!c.complete) c.why_incomplete = why_incomplete(c.missing, why);
    last_closed_ = last_closed_ ? std::max(*last_closed_, c.step) : c.step;
    pending_.erase(it);
    return c;
  }

  AssemblyLimits limits_;
  std::map<int64_t, Pending> pending_;
  std::vector<int64_t> next_step_;  // per rank: it sends nothing before this step
  std::optional<int64_t> newest_complete_;
  std::optional<int64_t> last_closed_;
};

}  // namespace sp::online
