// Job-level alarms with hysteresis: what a user pages on, one line each when raised or cleared.
//
// - A rank or stage: raised when its mean score over the last `short` or `long` analysed steps
//   is significant against the null (UnitFamily::window_p1, both windows and every unit
//   corrected for: Bonferroni x2, Sidak over the units) at alarm_alpha; cleared when its mean
//   over the short window is no longer one standard error above the null's mean. The two
//   windows: the short one raises a strong straggler within a few steps, the long one a weak
//   one that only many steps can tell from jitter. A rank is raised only while its mean score
//   over the short window exceeds what jitter costs the step and it is late on most of those
//   steps (noise_verdict.cpp: worker_p). And a rank or stage alarm needs the steps' verdicts to
//   have named it (a rank of its dp column, or the stage) on most of the short window: an alarm
//   says "27 of the last 30 steps"; one whose steps named someone else, or nobody, says nothing
//   true (long-tailed sequence lengths make a different rank the heaviest on every step).
//   A dp rank is raised by its lead over the long window (persistence.h) too, and where the
//   ranks' work is on the CPU by the CPU work test (WorkHistory, the step verdict's test): a
//   rank that computes more on cores it shares with its peers, whose wall times scatter.
// - A cause without one rank or stage (comm on a slow link, CPU delays everywhere): raised
//   when the steps naming it over the long window are too many for chance, each step naming
//   anything with probability <= alpha under the null (binomial test at alarm_alpha), and a step
//   of the short window names it; cleared when no step of the short window names it and the
//   long window's count is no longer significant at alpha. When most of the steps naming the
//   cause named one rank or stage (gc pauses that recur on one rank), the alarm names it too.
//   The same for worker, when one rank is named on some steps but not on most recent ones (a
//   rank slow every k-th step, which its own alarm above never raises), counting only the steps
//   that were themselves significantly slow: a rank that makes some steps slow, not one named
//   on unremarkable steps for a lateness over the window.
// Bounded: the list keeps the last kMaxRecords alarms.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "persistence.h"
#include "significance.h"
#include "straggler_probe/online/config.h"
#include "straggler_probe/online/verdict.h"

namespace sp::online {

struct AlarmRecord {
  AlarmEvent raised;
  std::optional<AlarmEvent> cleared;
};

class AlarmTracker {
 public:
  explicit AlarmTracker(const NoiseConfig& config) : cfg_(config) {}
  // The levels changed while the job runs (POST /control): the next step's tests use them.
  void set_levels(double alpha, double alarm_alpha) {
    cfg_.alpha = alpha;
    cfg_.alarm_alpha = alarm_alpha;
  }

  struct StepInput {
    int64_t step = 0;
    Cause cause = Cause::kNone;   // the step's verdict (kNone: nothing significant)
    Culprit target;
    const UnitFamily* dp = nullptr;      // dp ranks; an alarm names its rank in column_rank
    const UnitFamily* stages = nullptr;  // nullptr without a pipeline
    std::vector<int> column_rank;        // per dp rank: the rank this step's scores point at
    std::vector<int> rank_stage;
    std::vector<int> rank_dp;
    double S = 1.0;
    // Per dp rank: fixing it would save more than replacing jitter's slowest rank (fix_gain.h).
    std::vector<char> costs_more;
    bool slow_step = false;  // S itself significant against the null (p_S < alpha)
    // The dp rank that led the most recent steps and its persistence test (persistence.h).
    const Persistence* dp_lead = nullptr;
    // The dp rank that did more CPU work over recent steps, where the ranks' work is on the
    // CPU, and its test (persistence.h, WorkHistory); nullptr or no steps: no CPU times.
    const WorkHistory::Lead* dp_work = nullptr;
  };
  // The alarms this step raises or clears.
  std::vector<AlarmEvent> update(const StepInput& in);

  // report.json's "alarms": every alarm kept, oldest first.
  nlohmann::ordered_json to_json() const;
  static constexpr size_t kMaxRecords = 1000;

 private:
  struct Named {
    int64_t step;
    Cause cause;
    Culprit target;
    double S;
    int dp = -1, stage = -1;  // the unit the target is in (its rank's dp rank, or the stage)
    bool slow_step = false;   // StepInput::slow_step
  };
  bool named_on_most_recent(size_t unit, bool columns) const;
  struct Active {
    size_t record;  // index into records_ (adjusted when old records are dropped)
  };
  using NamedFilter = std::function<bool(const Named&)>;
  // An alarm's evidence: the recent steps `counts` accepts (how many, since when).
  AlarmEvent evidence(const Culprit& target, Cause cause, int64_t step, double score, double p,
                      const NamedFilter& counts) const;
  static NamedFilter names_cause(Cause cause, const Culprit& target);
  bool cause_alarm_covers(const StepInput& in, size_t unit, bool columns, Cause cause) const;
  Culprit usual_target(Cause cause, int named) const;
  bool intermittent(const Culprit& target) const;
  static bool counts_for(const Named& n, Cause c);
  Cause usual_cause(const NamedFilter& names, Cause fallback) const;
  void unit_alarms(const StepInput& in, const UnitFamily& family, Culprit::Kind kind,
                   std::vector<AlarmEvent>* out);
  void cause_alarms(const StepInput& in, std::vector<AlarmEvent>* out);
  bool stage_has_rank_alarm(const StepInput& in, int stage) const;
  bool dp_rank_shows(const StepInput& in) const;
  void raise(AlarmEvent e, std::vector<AlarmEvent>* out);
  void clear(size_t record, AlarmEvent e, std::vector<AlarmEvent>* out);

  NoiseConfig cfg_;
  std::deque<Named> named_;        // the last long_steps analysed steps
  std::deque<AlarmRecord> records_;
  size_t dropped_ = 0;             // records dropped from the front (bounded list)
  std::vector<size_t> active_;     // absolute record numbers (dropped_ + index) still raised
};

// `straggler_probe alarm raised: rank:2 cause=worker since step 14 (27 of the last 30 steps,
// S_w=1.21, p<1e-6)` / `straggler_probe alarm cleared: rank:2 cause=worker at step 80 (...)`.
std::string format_alarm_line(const AlarmEvent& e);
nlohmann::ordered_json alarm_event_json(const AlarmEvent& e);

}  // namespace sp::online
