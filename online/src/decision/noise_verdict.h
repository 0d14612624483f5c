// The noise model's part of a step's verdict: learn the jitter (noise_model.h), draw the null
// (null_scenarios.cpp), test the step and the cause rules' culprit against it
// (significance.h), and keep the job-level alarms (alarms.h). StepAnalysis calls it after the
// cause rules; it keeps the cause only when it is significant, else the step is cause none.
//
// Which test decides: a rank named for worker needs its dp rank's score (only that dp rank's
// ranks real) to be significant, this step (against the most extreme of N null dp ranks) or
// over the recent steps (its mean, alarms.h's two windows), and fixing it to save more than
// fixing jitter's slowest rank saves (fix_gain.h; a host of ranks late together is not a rank
// straggler, fixing one of them saves nothing); a stage named for stage-imbalance
// likewise against the null stages. Why dp ranks and not S_w per rank: S_w = min(dp-rank,
// stage score) raises every rank of a slow rank's dp column a little in a pipeline, and
// every rank of a heavier stage; the dp-rank score of a heavier stage's column is no higher
// than the others', so the two families separate a slow rank (its dp rank and its stage) from
// a heavy stage (its stage only). The causes that
// describe the whole step (gc, cpu-delay, comm) need either the step's S or their rank's
// score this step to be significant; seq-imbalance (work that differs, which the learned jitter
// contains) needs its own correlation to be. The two tests of a family are Bonferroni
// corrected (x2). When the rules' culprit is not significant but another rank is, over the
// window, and this step shows it late too (above the null median), that
// rank is named for worker: a persistently slow rank at thousands of ranks is often not the
// slowest of a step, jitter's maximum being larger than its slowdown.
//
// A fourth test of a dp rank, beside this step and the two windows' means: who led the long
// window (persistence.h), which needs no scale and so holds where the learned jitter is wider
// than how much the ranks really differ. It shares the long window's part of alpha with that
// window's mean (noise_units.cpp, worker_evidence); the verdict says which test named the rank
// (StepVerdict::named_by). Once it finds a dp rank leading, that rank's own scatter is left out
// of the jitter the null is drawn from and of the dp ranks' calibration (a culprit is not the
// noise; a clean job, with no rank leading, keeps them all). Not for stages, which are not
// exchangeable (noise_units.cpp, stage_evidence).
#pragma once

#include <cstdint>
#include <string>

#include "alarms.h"
#include "fix_gain.h"
#include "noise_model.h"
#include "persistence.h"
#include "model/seq_evidence.h"
#include "significance.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model.h"
#include "straggler_probe/online/config.h"
#include "straggler_probe/online/verdict.h"

namespace sp::online {

// A p-value as the lines print it (two significant digits).
std::string p_value_text(double p);

class NoiseVerdict {
 public:
  NoiseVerdict(const NoiseConfig& config, int window_steps);
  // The levels changed while the job runs (POST /control): the next step's tests and alarms
  // use them. The window tests' clip (window_clip) keeps the level the job started with.
  void set_levels(double alpha, double alarm_alpha) {
    cfg_.alpha = alpha;
    cfg_.alarm_alpha = alarm_alpha;
    alarms_.set_levels(alpha, alarm_alpha);
  }

  // A unit's p (its tests Bonferroni corrected) and the test that gave it.
  struct UnitEvidence {
    double p = 1.0;
    const char* by = "step";  // "step", "window" or "persistence"
  };

  void push(const StepModel& model) { noise_.push(model); }
  void pop_back() { noise_.pop_back(); }
  // After the metrics and the cause rules: draws the null, tests, sets v's cause (kNone when
  // nothing is significant), S_null, jitter, p_S, p, and the alarms this step raises or clears.
  // comm_p: the comm cause's own evidence, the transfer reference's test of the dominant
  // transfers (StepAnalysis; 1 when none).
  // dp_fix_gain: the step's SlowdownMetrics::dp_fix_gain.
  void judge(const StepModel& model, const SeqEvidence& seq, double comm_p, const std::vector<double>& dp_fix_gain,
             SlowdownAnalysis* slowdown, StepVerdict* v);

  nlohmann::ordered_json alarms_json() const { return alarms_.to_json(); }

  // The first judged step draws one null before its verdict and owes the rest of the pool
  // (window_steps - 1 more draws of the same step): drawn by draw_owed after its line is out, so
  // that the job's first verdict waits for one null replay, not twenty. Nothing can be named on
  // that step either way (no dispersion yet: every p is 1), and from the next step on the pools
  // hold exactly what they held when all were drawn at once.
  bool owes_draws() const { return owed_draws_ > 0; }
  // `model` and `slowdown`: the judged step's, untouched since judge().
  void draw_owed(const StepModel& model, SlowdownAnalysis* slowdown);

 private:
  void draw_null(const StepModel& model, SlowdownAnalysis* slowdown);
  void add_draw(const StepModel& model, const NoiseSpread& spread, int index, SlowdownAnalysis* slowdown);
  UnitEvidence stage_evidence(size_t stage) const;
  UnitEvidence worker_evidence(size_t dp_rank) const;
  // The persistence test of one unit: the step's leading unit's, computed once per step, or
  // that unit's own (another unit cannot be significant, having a rival that led as often).
  Persistence unit_persistence(const UnitFamily& family, const Persistence& leading, size_t unit) const;
  // Whether fixing dp rank d would save more than replacing jitter's slowest rank (fix_gain.h).
  bool costs_more_than_jitter(size_t dp_rank) const;
  // Its p: fix_gain.h's window test, over the shorter and the longer alarm window.
  double recent_gain_p(size_t dp_rank) const;
  UnitEvidence cause_p(const StepModel& model, const SeqEvidence& seq, double comm_p, const StepVerdict& v) const;
  // A cause of the whole step (gc, cpu-delay, comm, seq-imbalance): its p this step.
  double step_cause_p(const SeqEvidence& seq, double comm_p, const StepVerdict& v, int dp_rank) const;
  int column_rank(const StepModel& model, const StepVerdict& v, int dp_rank) const;
  void name_persistent(const StepModel& model, size_t dp_rank, const UnitEvidence& e, StepVerdict* v) const;
  // The rules' culprit within the noise: a dp rank named by its own tests, or cause none.
  void rules_within_noise(const StepModel& model, double p, StepVerdict* v);
  // The dp ranks' CPU time this step into work_, and its test.
  void add_cpu_work(const StepModel& model, double ideal_s);
  // A significant cause of a step that lost less than min_slowdown: cause none.
  void too_small_to_name(const StepModel& model, StepVerdict* v) const;
  // This step's leading dp rank (persistence.h), and the jitter and calibration without it.
  void find_leaders(const StepModel& model);
  // v's named_by and persist (the family of the unit named).
  void say_evidence(const StepModel& model, const char* by, StepVerdict* v) const;
  static std::string lead_text(const PersistenceEvidence& lead, const std::string& peers);
  // Each dp rank's column_rank for this step (column_rank then looks it up; -1: no ranks).
  void find_column_ranks(const StepModel& model, const StepVerdict& v);

  NoiseConfig cfg_;
  NoiseWindow noise_;
  UnitFamily dp_, stages_;  // dp ranks (the paper's per-dp-rank scores) and stages
  FixGains fix_;            // what fixing each dp rank saves, and the null's best
  StepNull step_null_;
  AlarmTracker alarms_;
  NullDraw draw_;
  int pool_steps_;
  uint64_t steps_ = 0;
  int owed_draws_ = 0;
  NoiseSpread owed_spread_;  // the first step's spread, for the owed draws
  Persistence dp_lead_;                      // this step's leading dp rank
  WorkHistory work_;                         // the dp ranks' CPU work (persistence.h)
  WorkHistory::Lead work_lead_;              // ... this step's test of it
  std::vector<char> excluded_ranks_;         // the leading dp rank's ranks, left out of the jitter
  std::vector<int> columns_;                 // per dp rank: the rank to name (column_rank)
  std::vector<double> column_p_, stage_p_;  // find_column_ranks' scratch
};

}  // namespace sp::online
