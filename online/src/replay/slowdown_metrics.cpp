#include "slowdown_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sp::online {
namespace {

// Share of the recoverable slowdown (T - T_ideal) that a fix-only scenario recovers.
double share(double T, double T_fixed, double T_ideal) {
  const double gap = T - T_ideal;
  if (!(gap > 1e-9 * std::max(1.0, T))) return 0;
  return (T - T_fixed) / gap;
}

}  // namespace

void SlowdownMetrics::clear() {
  T_real = T_nodelay = T_ideal = 0;
  M_S = M_W = 0;
  for (auto* v : {&dp_S, &stage_S, &worker_S, &fix_stage_share, &dp_fix_gain, &own_work_ratio}) v->clear();
  op_S.clear();
  top_workers.clear();
}

double SlowdownAnalysis::replay(const Selection& s, ScenarioReplay* into) {
  ++work_.full_replays;
  return into->run(plan_, values_, s);
}

void SlowdownAnalysis::compute(const StepModel& m, const Ideals& ideals, double top_fraction,
                               bool want_timeline, SlowdownMetrics* out) {
  work_ = {};
  build_replay_plan(m, &plan_);
  compute_node_values(m, ideals, &node_values_);
  gather_plan_values(m, node_values_, plan_, &values_);
  settle_start_offsets();
  SlowdownMetrics& r = *out;
  r.clear();
  base_scenarios(m, &r);
  unit_scores(m, &r);
  worker_scores(m, top_fraction, &r);
  own_work(m, &r);
  // The timeline's arrays are left out of clear(): timeline() overwrites them whole (not zeroed
  // first), or they are emptied here.
  if (want_timeline) {
    timeline(m, &r);
  } else {
    for (auto* v : {&r.real_start, &r.real_end, &r.ideal_start, &r.ideal_end}) v->clear();
  }
}

// Where each rank would start this step had the previous step been ideal: its step starts at
// its previous step mark, so the offsets between ranks are those of the ideal step's ends. Why:
// in a pipeline the stages start a step at different times (the last stage finishes the previous
// one first and waits for the first micro-batch), and a straggler moves those offsets; replayed
// from the recorded offsets the ideal would still carry the previous step's straggling (a slow
// stage-0 rank starts its stage late and the ideal waits for it; in data parallel a straggler's
// slow optimizer makes it start the next step late). One replay of the ideal from the recorded
// offsets gives the ideal ends; they depend on when the first stage starts, not on the others,
// so one pass settles them. Every scenario but the real replays (kRecorded, kZero) starts there.
void SlowdownAnalysis::settle_start_offsets() {
  selection_.reset(values_.num_types, plan_.start_at.size(), false, DelayMode::kIdeal);
  replay(selection_, &ideal_);
  double earliest = std::numeric_limits<double>::infinity();
  for (int32_t marker : plan_.marker_at) earliest = std::min(earliest, ideal_.end()[static_cast<size_t>(marker)]);
  for (size_t r = 0; r < plan_.start_at.size(); ++r) {
    const auto start = static_cast<size_t>(plan_.start_at[r]);
    const double offset = ideal_.end()[static_cast<size_t>(plan_.marker_at[r])] - earliest;
    values_.delay[static_cast<size_t>(DelayMode::kReal)][start] = offset;
    values_.delay[static_cast<size_t>(DelayMode::kIdeal)][start] = offset;
  }
}

// Real and ideal (replayed alone: the timeline keeps their times), then no launch delay and
// "ideal but one op type (or the launch delays) real", replayed side by side.
void SlowdownAnalysis::base_scenarios(const StepModel& m, SlowdownMetrics* r) {
  const size_t types = values_.num_types;
  const size_t world = static_cast<size_t>(m.world);
  selection_.reset(types, world, true, DelayMode::kRecorded);
  r->T_real = replay(selection_, &real_);
  selection_.reset(types, world, false, DelayMode::kIdeal);
  // The straggler-free step is never slower than the real one. The ideal replay can come out
  // longer: re-balancing moves work onto a stage on the critical path (a clean GPipe pipeline
  // whose last stage also runs the loss: the first stage's backwards, which end the step, get
  // its share), or this step's transfers and delays were below the window's usual. Such a step
  // has nothing to recover: S = 1, and its scores are taken against the real step.
  ideal_raw_ = replay(selection_, &ideal_);
  r->T_ideal = std::min(ideal_raw_, r->T_real);
  const ValueSide ideal_side{false, DelayMode::kIdeal};
  lanes_.clear();
  lanes_.push_back({{true, DelayMode::kZero}, -1, {}});
  for (size_t t = 0; t < types; ++t) lanes_.push_back({ideal_side, static_cast<int32_t>(t), {true, DelayMode::kIdeal}});
  lanes_.push_back({{false, DelayMode::kReal}, -1, {}});
  batch_.run(plan_, values_, values_.type_at, lanes_, &lane_times_);
  work_.full_replays += lanes_.size();
  r->T_nodelay = lane_times_[0];
  const double ideal = r->T_ideal > 0 ? r->T_ideal : 1e-12;
  for (size_t t = 0; t < types; ++t) r->op_S.emplace_back(m.type_names[t], lane_times_[t + 1] / ideal);
  r->op_S.emplace_back("launch-delay", lane_times_[types + 1] / ideal);
}

// Per dp rank and per stage: only that unit real (the paper's S per dp rank / stage); per
// stage again: only that stage fixed (M_S); per dp rank again: only that dp rank fixed, against
// the step with every op real (both replayed from the ideal start offsets, kReal, so that the
// gain is the dp rank's own work and delays, not the recorded offsets).
void SlowdownAnalysis::unit_scores(const StepModel& m, SlowdownMetrics* r) {
  const double ideal = r->T_ideal > 0 ? r->T_ideal : 1e-12;
  const ValueSide ideal_side{false, DelayMode::kIdeal}, real_side{true, DelayMode::kReal};
  dp_units_.run(plan_, values_, m.rank_dp, m.dp_size, ideal_side, real_side, unit_method_, &unit_times_);
  work_.dp = dp_units_.stats();
  for (double t : unit_times_) r->dp_S.push_back(t / ideal);
  stage_units_.run(plan_, values_, m.rank_stage, m.pp_size, ideal_side, real_side, unit_method_, &unit_times_);
  work_.stage = stage_units_.stats();
  for (double t : unit_times_) r->stage_S.push_back(t / ideal);
  r->fix_stage_share.assign(static_cast<size_t>(m.pp_size), 0.0);
  if (m.pp_size > 1) {
    stage_units_.run(plan_, values_, m.rank_stage, m.pp_size, real_side, ideal_side, unit_method_, &unit_times_);
    work_.fix_stage = stage_units_.stats();
    for (size_t p = 0; p < unit_times_.size(); ++p) {
      r->fix_stage_share[p] = share(r->T_real, unit_times_[p], r->T_ideal);
    }
    r->M_S = r->fix_stage_share.back();
  }
  selection_.reset(values_.num_types, static_cast<size_t>(m.world), true, DelayMode::kReal);
  const double T_all_real = replay(selection_, &other_);
  dp_units_.run(plan_, values_, m.rank_dp, m.dp_size, real_side, ideal_side, unit_method_, &unit_times_);
  work_.fix_dp = dp_units_.stats();
  for (double t : unit_times_) r->dp_fix_gain.push_back(std::max(0.0, T_all_real - t) / ideal);
  work_.full_replays += work_.dp.full_replays + work_.stage.full_replays + work_.fix_stage.full_replays +
                        work_.fix_dp.full_replays;
}

// S_w (the paper's scalable approximation: min of the worker's dp-rank and stage scores), the
// top workers and M_W (fix only them: the paper's top 3%, at least one).
void SlowdownAnalysis::worker_scores(const StepModel& m, double top_fraction, SlowdownMetrics* r) {
  r->worker_S.resize(static_cast<size_t>(m.world));
  for (size_t rank = 0; rank < r->worker_S.size(); ++rank) {
    r->worker_S[rank] = std::min(r->dp_S[static_cast<size_t>(m.rank_dp[rank])],
                                 r->stage_S[static_cast<size_t>(m.rank_stage[rank])]);
  }
  std::vector<int> order(static_cast<size_t>(m.world));
  for (int i = 0; i < m.world; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [r](int a, int b) {
    return r->worker_S[static_cast<size_t>(a)] > r->worker_S[static_cast<size_t>(b)];
  });
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::floor(top_fraction * m.world)));
  r->top_workers.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(k, order.size())));
  selection_.reset(values_.num_types, static_cast<size_t>(m.world), true, DelayMode::kReal);
  for (int w : r->top_workers) {
    selection_.rank_real[static_cast<size_t>(w)] = 0;
    selection_.rank_delay[static_cast<size_t>(w)] = static_cast<uint8_t>(DelayMode::kIdeal);
  }
  r->M_W = share(r->T_real, replay(selection_, &other_), r->T_ideal);
}

// Per rank: the real and ideal work of its compute nodes (segments), summed in node order.
void SlowdownAnalysis::own_work(const StepModel& m, SlowdownMetrics* r) const {
  const auto world = static_cast<size_t>(m.world);
  std::vector<double> real(world, 0.0), ideal(world, 0.0);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& node = m.nodes[i];
    if (node.role != NodeRole::kCompute) continue;
    real[static_cast<size_t>(node.rank)] += node_values_.real_work[i];
    ideal[static_cast<size_t>(node.rank)] += node_values_.ideal_work[i];
  }
  r->own_work_ratio.resize(world);
  for (size_t rank = 0; rank < world; ++rank) {
    r->own_work_ratio[rank] = ideal[rank] > 0 ? real[rank] / ideal[rank] : 1.0;
  }
}

// Per node (not position): the real and the ideal replay.
void SlowdownAnalysis::timeline(const StepModel& m, SlowdownMetrics* r) const {
  const size_t n = m.nodes.size();
  r->real_start.resize(n);
  r->real_end.resize(n);
  r->ideal_start.resize(n);
  r->ideal_end.resize(n);
  for (size_t p = 0; p < n; ++p) {
    const auto v = static_cast<size_t>(plan_.node_at[p]);
    r->real_start[v] = real_.start()[p];
    r->real_end[v] = real_.end()[p];
    r->ideal_start[v] = ideal_.start()[p];
    r->ideal_end[v] = ideal_.end()[p];
  }
}

}  // namespace sp::online
