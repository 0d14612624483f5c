// The paper's slowdown metrics of one step (S, S_t, S_w per dp rank / stage / rank, M_S, M_W)
// from its what-if scenarios: real, no launch delays, ideal, and "ideal except one group put
// back" for each op type, dp rank and stage; then the fix-only scenarios behind M_S and M_W.
//
// How they are computed (see online/README.md, "Scaling"): the scenarios whose number does not
// grow with the job (real, ideal, one per op type, M_W) are full replays of the step
// (scenario_replay.h); the per-dp-rank and per-stage ones go through UnitScenarios
// (unit_scenarios.h), which gives every unit its exact step time without a full replay each.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ideal/ideal_window.h"
#include "lane_batch.h"
#include "replay/noise_spread.h"
#include "replay_plan.h"
#include "scenario_replay.h"
#include "scenario_values.h"
#include "model/step_model.h"
#include "unit_scenarios.h"

namespace sp::online {

struct SlowdownMetrics {
  double T_real = 0, T_nodelay = 0, T_ideal = 0;
  // The step's slowdown S = T_real / T_ideal (1 when the ideal replay took no time), and the
  // share of the real step that launch delays (CPU gaps) take.
  double S() const { return T_ideal > 0 ? T_real / T_ideal : 1.0; }
  double launch_share() const { return T_real > 0 ? (T_real - T_nodelay) / T_real : 0.0; }
  std::vector<std::pair<std::string, double>> op_S;  // by type, plus "launch-delay"
  std::vector<double> dp_S, stage_S, worker_S;       // worker_S per rank
  std::vector<double> fix_stage_share;  // per stage: share of the slowdown fixing it recovers
  // Per dp rank: what fixing only that dp rank's ranks (the others real) takes off S, as a
  // fraction of the ideal step: (T_real - T_fixed) / T_ideal, >= 0. The worker rule's cost test
  // (noise_verdict.cpp): naming a rank means that replacing it would make the step faster.
  std::vector<double> dp_fix_gain;
  // Per rank: its compute work, real over ideal (1 when it has none): what the rank itself did
  // against the ideal, apart from whom it waited for. The stage rule reads it to tell a stage
  // whose every rank works harder from one slow rank in it (cause_rules.cpp, rule 6).
  std::vector<double> own_work_ratio;
  double M_S = 0, M_W = 0;
  std::vector<int> top_workers;
  // Per node, seconds since t0: replay with real values and with ideal values (for timelines).
  std::vector<double> real_start, real_end, ideal_start, ideal_end;

  // Back to the defaults, keeping the vectors' capacity; all but the timeline's arrays, which
  // SlowdownAnalysis::compute sets whole or empties.
  void clear();
};

// One draw of the "no rank is special" null for the step just computed: every op at its ideal
// value times its key's jitter (noise_spread.h, learned by decision/noise_model.h), launch
// delays likewise, replayed in full (S) and per dp rank / stage with only that unit drawn (the null of each unit's score).
struct NullDraw {
  double S = 1.0;
  std::vector<double> dp_S, stage_S;
  // The most that fixing one dp rank (every op drawn, that dp rank's ideal) takes off the
  // drawn step, as a fraction of the ideal: what replacing the slowest rank saves when no rank
  // is special (the gap between jitter's slowest ranks).
  double best_fix_gain = 0.0;
};

// How one step's metrics were computed, for the benchmark and the tests.
struct MetricsWork {
  size_t full_replays = 0;       // whole-step replays (real, ideal, op types, M_W, fallbacks)
  size_t null_replays = 0;       // null draws (null_draw), each a full replay + unit runs
  UnitScenarioStats dp, stage, fix_stage, fix_dp;
};

// Computes the metrics of one step at a time; keeps its buffers from step to step, so that a
// steady job does not allocate per step beyond the result. Thread-compatible.
class SlowdownAnalysis {
 public:
  // Throws whatif::GraphError when the graph has a cycle.
  void compute(const StepModel& model, const Ideals& ideals, double top_fraction,
               bool want_timeline, SlowdownMetrics* out);

  // After compute(): one null draw for the same step (null_scenarios.cpp); `seed` picks the draw.
  void null_draw(const StepModel& model, const NoiseSpread& spread, uint64_t seed, NullDraw* out);

  // kAuto in the product; the tests force one method or the other.
  void set_unit_method(UnitMethod m) { unit_method_ = m; }
  // Whether the ideal follows each step's level (IdealConfig): the null's draws then do too.
  void set_follow_step_level(bool on) { follow_step_level_ = on; }
  const MetricsWork& work() const { return work_; }

 private:
  double replay(const Selection& s, ScenarioReplay* into);
  void settle_start_offsets();
  void base_scenarios(const StepModel& m, SlowdownMetrics* r);
  void unit_scores(const StepModel& m, SlowdownMetrics* r);
  void worker_scores(const StepModel& m, double top_fraction, SlowdownMetrics* r);
  void own_work(const StepModel& m, SlowdownMetrics* r) const;
  void timeline(const StepModel& m, SlowdownMetrics* r) const;

  UnitMethod unit_method_ = UnitMethod::kAuto;
  MetricsWork work_;
  ReplayPlan plan_;
  NodeValues node_values_;
  PlanValues values_;
  Selection selection_;
  ScenarioReplay real_, ideal_, other_;
  LaneBatch batch_;
  std::vector<LaneBatch::Lane> lanes_;
  std::vector<double> lane_times_;
  // One per family (dp ranks, stages), so that each keeps its layout for the step's other runs
  // of that family (the fix-stage scenarios, the null draws).
  UnitScenarios dp_units_{&batch_}, stage_units_{&batch_};
  double ideal_raw_ = 0;       // the ideal replay's step time before the S >= 1 cap
  // A null draw's work and kReal delays, swapped with values_' recorded side while it replays.
  std::vector<double> null_work_, null_delay_;
  std::vector<double> op_factor_, op_shift_, marker_shift_, group_factor_;  // the null's draws, per op / rank
  std::vector<int> draw_key_, draw_delay_key_;  // draw_factors' per-op keys and what follows the step level
  std::vector<char> draw_follows_, draw_has_delay_;
  bool follow_step_level_ = true;
  void draw_factors(const StepModel& m, const NoiseSpread& spread, void* draws);
  std::vector<double> unit_times_;
};

}  // namespace sp::online
