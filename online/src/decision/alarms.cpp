#include "alarms.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

std::string p_text(double p) {
  if (p < 1e-6) return "p<1e-6";
  char buf[32];
  std::snprintf(buf, sizeof buf, "p=%.2g", p);
  return buf;
}

// A rank's own alarm (its score is S_w); a cause alarm that names a rank carries the steps' S.
bool is_rank_alarm(const AlarmEvent& e) { return e.unit >= 0 && e.target.kind == Culprit::Kind::kRank; }

// A standard error's worth above the null's mean: the short window's mean no longer shows it.
const double kClearP1 = normal_upper(1.0);

}  // namespace

AlarmEvent AlarmTracker::evidence(const Culprit& target, Cause cause, int64_t step, double score, double p,
                                  const NamedFilter& counts) const {
  AlarmEvent e;
  e.target = target;
  e.cause = cause;
  e.step = step;
  e.since = step;
  e.of = static_cast<int>(named_.size());
  e.score = score;
  e.p = p;
  for (const Named& n : named_) {
    if (!counts(n)) continue;
    if (e.steps == 0) e.since = n.step;
    ++e.steps;
  }
  return e;
}

// The cause the steps that `names` accepts gave most often over the window.
Cause AlarmTracker::usual_cause(const NamedFilter& names, Cause fallback) const {
  std::map<Cause, int> count;
  for (const Named& n : named_) {
    if (names(n) && n.cause != Cause::kNone) ++count[n.cause];
  }
  Cause best = fallback;
  int most = 0;
  for (const auto& [c, k] : count) {
    if (k > most) {
      most = k;
      best = c;
    }
  }
  return best;
}

// Whether a cause alarm already raised for `cause` names a rank of dp unit u (or stage u): a
// slow p2p link's comm alarm names one of its ranks, and the dp column's lateness behind it
// is the same thing, said once.
bool AlarmTracker::cause_alarm_covers(const StepInput& in, size_t u, bool columns, Cause cause) const {
  for (size_t a : active_) {
    const AlarmEvent& e = records_[a - dropped_].raised;
    if (e.unit >= 0 || e.cause != cause || e.target.empty()) continue;
    const int r = e.target.rank_index();
    if (columns && r >= 0) {
      if (static_cast<size_t>(r) < in.rank_dp.size() && in.rank_dp[static_cast<size_t>(r)] == static_cast<int>(u)) return true;
    } else if (!columns && e.target.stage_index() == static_cast<int>(u)) {
      return true;
    }
  }
  return false;
}

bool AlarmTracker::stage_has_rank_alarm(const StepInput& in, int stage) const {
  for (size_t a : active_) {
    const int r = records_[a - dropped_].raised.target.rank_index();
    if (r >= 0 && static_cast<size_t>(r) < in.rank_stage.size() && in.rank_stage[static_cast<size_t>(r)] == stage) return true;
  }
  return false;
}

// Whether some dp rank's window already shows lateness, or a dp rank leads the window, at the
// step level alpha: then a stage that looks slow may be that rank's stage, and the rank's
// alarm (a few steps later) says so.
bool AlarmTracker::dp_rank_shows(const StepInput& in) const {
  if (!in.dp) return false;
  if (in.dp_lead && in.dp_lead->unit >= 0 && in.dp_lead->p < cfg_.alpha) return true;
  const double n = static_cast<double>(in.dp->units());
  for (size_t d = 0; d < in.dp->units(); ++d) {
    const double p = sidak(2 * std::min(in.dp->window_p1(d, cfg_.alarm_short_steps),
                                        in.dp->window_p1(d, cfg_.alarm_long_steps)), n);
    if (p < cfg_.alpha) return true;
  }
  return false;
}

void AlarmTracker::raise(AlarmEvent e, std::vector<AlarmEvent>* out) {
  out->push_back(e);
  records_.push_back({std::move(e), std::nullopt});
  active_.push_back(dropped_ + records_.size() - 1);
  // Bounded: drop the oldest cleared alarms (a raised one stays until it clears).
  while (records_.size() > kMaxRecords && records_.front().cleared) {
    records_.pop_front();
    ++dropped_;
  }
}

void AlarmTracker::clear(size_t record, AlarmEvent e, std::vector<AlarmEvent>* out) {
  AlarmRecord& r = records_[record - dropped_];
  e.raised = false;
  e.target = r.raised.target;
  e.unit = r.raised.unit;
  e.cause = r.raised.cause;
  e.since = r.raised.step;
  r.cleared = e;
  out->push_back(e);
  active_.erase(std::find(active_.begin(), active_.end(), record));
}

void AlarmTracker::unit_alarms(const StepInput& in, const UnitFamily& family, Culprit::Kind kind,
                               std::vector<AlarmEvent>* out) {
  const double n = static_cast<double>(family.units());
  const bool columns = kind == Culprit::Kind::kRank;
  for (size_t u = 0; u < family.units(); ++u) {
    const Culprit target = columns ? Culprit::rank(u < in.column_rank.size() ? in.column_rank[u] : static_cast<int>(u))
                                   : Culprit::stage(static_cast<int>(u));
    // The steps that named this unit: a rank of its dp column (the rank named may move within
    // the column), or the stage.
    const NamedFilter names_unit = [u, columns](const Named& step) {
      return (columns ? step.dp : step.stage) == static_cast<int>(u);
    };
    const double p_short = family.window_p1(u, cfg_.alarm_short_steps);
    // A dp rank's lead over the long window (persistence.h; stages have none: they are not
    // exchangeable). Only the rank that led the most can be significant (any other has a rival
    // that led at least as often).
    const Persistence* lead = columns ? in.dp_lead : nullptr;
    const double p_lead = lead && lead->unit == static_cast<int>(u) ? lead->p : 1.0;
    // Its CPU work over the recent steps, with the step verdict's gate (a median lead over
    // every other rank of at least min_slowdown of the ideal step); where CPU times are known
    // it takes half of alarm_alpha, the wall tests the other half (x2 each).
    const WorkHistory::Lead* work = columns && in.dp_work && in.dp_work->steps > 0 ? in.dp_work : nullptr;
    const double p_work = work && work->unit == static_cast<int>(u) && work->median_lead >= cfg_.min_slowdown
                              ? work->p
                              : 1.0;
    const double shares = work ? 2 : 1;
    // The two windows' means share alarm_alpha (x2); a dp rank's lead takes half the long
    // window's share, as in the verdict (noise_units.cpp, worker_evidence).
    const double long_share = lead ? 4 : 2;
    double p_window = std::min(sidak(2 * p_short, n), sidak(long_share * family.window_p1(u, cfg_.alarm_long_steps), n));
    // A dp rank's alarm is kept under its unit (the rank named may move within its column).
    auto it = std::find_if(active_.begin(), active_.end(), [&](size_t a) {
      const AlarmEvent& e = records_[a - dropped_].raised;
      return e.unit == static_cast<int>(u) && (e.target.kind == Culprit::Kind::kRank) == columns;
    });
    if (it != active_.end()) {
      // Hysteresis: cleared once neither window shows it, the short one no longer a standard
      // error above the null's mean and the long one no longer significant at alpha, and it no
      // longer leads the long window at alpha.
      if (p_short > kClearP1 && family.window_p1(u, cfg_.alarm_long_steps) > cfg_.alpha && p_lead >= cfg_.alpha &&
          p_work >= cfg_.alpha) {
        clear(*it, evidence(target, Cause::kNone, in.step, family.window_mean_S(u, cfg_.alarm_short_steps), p_short, names_unit),
              out);
      }
      continue;
    }
    // A dp rank's window test also needs the worker's gates: fixing it saves more than jitter's
    // slowest rank, and it is late on most recent steps (noise_units.cpp, worker_evidence). Its
    // lead needs neither (the same reasons as the step's verdict).
    if (columns && (u >= in.costs_more.size() || !in.costs_more[u] ||
                    family.window_median_z(u, cfg_.alarm_short_steps) <= 0)) {
      p_window = 1.0;
    }
    const double p = shares * std::min(lead ? std::min(p_window, 4 * p_lead) : p_window, p_work);
    if (p >= cfg_.alarm_alpha) continue;
    if (!named_on_most_recent(u, columns)) continue;
    // A stage with a rank in alarm is slow because of that rank (ranks are judged against
    // their own stage's peers, so a stage that is heavier as a whole raises no rank alarm).
    if (!columns && (stage_has_rank_alarm(in, static_cast<int>(u)) || dp_rank_shows(in))) continue;
    // The cause the steps naming the unit gave (a slow p2p link's verdicts say comm, on either
    // of its ranks), unless a cause alarm says it already.
    const Cause cause = usual_cause(names_unit, columns ? Cause::kWorker : Cause::kStageImbalance);
    if (cause_alarm_covers(in, u, columns, cause)) continue;
    AlarmEvent e = evidence(target, cause, in.step, family.window_mean_S(u, cfg_.alarm_long_steps), p, names_unit);
    e.unit = static_cast<int>(u);
    raise(std::move(e), out);
  }
}

void AlarmTracker::cause_alarms(const StepInput& in, std::vector<AlarmEvent>* out) {
  for (Cause c : {Cause::kWorker, Cause::kGc, Cause::kCpuDelay, Cause::kComm, Cause::kSeqImbalance}) {
    int in_short = 0, in_long = 0;
    double sum_S = 0;
    for (size_t i = 0; i < named_.size(); ++i) {
      if (!counts_for(named_[i], c)) continue;
      ++in_long;
      sum_S += named_[i].S;
      if (i + static_cast<size_t>(std::max(1, cfg_.alarm_short_steps)) >= named_.size()) ++in_short;
    }
    auto it = std::find_if(active_.begin(), active_.end(), [&](size_t a) {
      const AlarmEvent& e = records_[a - dropped_].raised;
      return e.unit < 0 && e.cause == c;
    });
    const double p = binomial_upper(in_long, static_cast<int>(named_.size()), cfg_.alpha);
    // Hysteresis: raised at alarm_alpha while recent steps name it; cleared once the short
    // window names it no more and the long window's count is no longer significant at alpha
    // (a cause named one step in four would otherwise clear and raise again every few steps).
    if (it != active_.end()) {
      if (in_short == 0 && p >= cfg_.alpha) {
        const Culprit target = records_[*it - dropped_].raised.target;
        clear(*it, evidence(target, c, in.step, in.S, 1.0, names_cause(c, target)), out);
      }
      continue;
    }
    if (in_short == 0) continue;
    // Not when a rank or stage already alarms for this cause: the same thing, said once.
    bool covered = false;
    for (size_t a : active_) covered = covered || records_[a - dropped_].raised.cause == c;
    if (p >= cfg_.alarm_alpha || covered) continue;
    const Culprit target = usual_target(c, in_long);
    // worker: a rank slow on some steps only (every k-th step), whose own alarm never comes
    // because it is not named on most recent steps; a rank that is, is its own alarm's
    // business, and worker steps scattered over many ranks are not one straggler.
    if (c == Cause::kWorker && !intermittent(target)) continue;
    raise(evidence(target, c, in.step, sum_S / in_long, p, names_cause(c, target)), out);
  }
}

// The steps a cause alarm's evidence counts: those naming the cause (and its target, if any).
AlarmTracker::NamedFilter AlarmTracker::names_cause(Cause c, const Culprit& target) {
  return [c, target](const Named& n) { return counts_for(n, c) && (target.empty() || n.target == target); };
}

// Whether a step counts for the cause alarm of c (see alarms.h: worker counts slow steps only).
bool AlarmTracker::counts_for(const Named& n, Cause c) { return n.cause == c && (c != Cause::kWorker || n.slow_step); }

// Whether the recent steps named `target` on at most half of the steps since they first named
// it: slow on some steps only. A rank that became slow and stays so is named on most of them
// (its own alarm, unit_alarms, follows within a few steps).
bool AlarmTracker::intermittent(const Culprit& target) const {
  if (target.empty()) return false;
  size_t first = named_.size(), named = 0;
  for (size_t i = 0; i < named_.size(); ++i) {
    if (named_[i].target != target) continue;
    first = std::min(first, i);
    ++named;
  }
  return named > 0 && 2 * named <= named_.size() - first;
}

// The rank or stage that most of the `named` steps naming cause c named, when more than half
// of them named the same one (gc pauses recurring on one rank: "rank:2 cause=gc"); else none.
Culprit AlarmTracker::usual_target(Cause c, int named) const {
  std::map<Culprit, int> count;
  for (const Named& n : named_) {
    if (counts_for(n, c) && !n.target.empty()) ++count[n.target];
  }
  for (const auto& [target, k] : count) {
    if (2 * k > named) return target;
  }
  return {};
}

bool AlarmTracker::named_on_most_recent(size_t unit, bool columns) const {
  const size_t window = std::min(named_.size(), static_cast<size_t>(std::max(1, cfg_.alarm_short_steps)));
  size_t count = 0;
  for (size_t i = named_.size() - window; i < named_.size(); ++i) {
    count += static_cast<size_t>(columns ? named_[i].dp : named_[i].stage) == unit;
  }
  return 2 * count > window;
}

std::vector<AlarmEvent> AlarmTracker::update(const StepInput& in) {
  Named named{in.step, in.cause, in.target, in.S};
  named.slow_step = in.slow_step;
  if (in.cause != Cause::kNone) {
    const int r = in.target.rank_index();
    if (r >= 0 && static_cast<size_t>(r) < in.rank_dp.size()) named.dp = in.rank_dp[static_cast<size_t>(r)];
    named.stage = in.target.stage_index();
  }
  named_.push_back(std::move(named));
  while (static_cast<int>(named_.size()) > std::max(1, cfg_.alarm_long_steps)) named_.pop_front();
  std::vector<AlarmEvent> out;
  if (in.dp) unit_alarms(in, *in.dp, Culprit::Kind::kRank, &out);
  if (in.stages) unit_alarms(in, *in.stages, Culprit::Kind::kStage, &out);
  cause_alarms(in, &out);
  return out;
}

nlohmann::ordered_json alarm_event_json(const AlarmEvent& e) {
  nlohmann::ordered_json j;
  j["event"] = "alarm";
  j["state"] = e.raised ? "raised" : "cleared";
  j["step"] = e.step;
  j["target"] = e.target.text();
  j["cause"] = std::string(cause_name(e.cause));
  j["since"] = e.since;
  j["steps"] = e.steps;
  j["of"] = e.of;
  j[is_rank_alarm(e) ? "S_w" : "S"] = e.score;
  j["p"] = e.p;
  return j;
}

nlohmann::ordered_json AlarmTracker::to_json() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const AlarmRecord& r : records_) {
    nlohmann::ordered_json j;
    j["target"] = r.raised.target.text();
    j["cause"] = std::string(cause_name(r.raised.cause));
    j["raised_step"] = r.raised.step;
    j["cleared_step"] = r.cleared ? nlohmann::ordered_json(r.cleared->step) : nlohmann::ordered_json();
    j["since"] = r.raised.since;
    j["steps"] = r.raised.steps;
    j["of"] = r.raised.of;
    j[is_rank_alarm(r.raised) ? "S_w" : "S"] = r.raised.score;
    j["p"] = r.raised.p;
    list.push_back(std::move(j));
  }
  return list;
}

std::string format_alarm_line(const AlarmEvent& e) {
  const std::string what = (e.target.empty() ? std::string("job") : e.target.text()) + " cause=" + std::string(cause_name(e.cause));
  const std::string score = std::string(is_rank_alarm(e) ? "S_w=" : "S=") + fixed(e.score, 2);
  if (e.raised) {
    return "straggler_probe alarm raised: " + what + " since step " + std::to_string(e.since) + " (" +
           std::to_string(e.steps) + " of the last " + std::to_string(e.of) + " steps, " + score + ", " +
           p_text(e.p) + ")";
  }
  return "straggler_probe alarm cleared: " + what + " at step " + std::to_string(e.step) + " (raised at step " +
         std::to_string(e.since) + "; " + std::to_string(e.steps) + " of the last " + std::to_string(e.of) +
         " steps named it, " + score + ")";
}

}  // namespace sp::online
