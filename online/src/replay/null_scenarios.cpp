// SlowdownAnalysis::null_draw: one draw of the step under the "no rank is special" null.
//
// Every op takes its ideal duration times exp(sigma z - sigma^2 / 2) (z standard normal, one per
// op: a compute op cut into segments keeps one factor; mean-preserving, so the draws scatter around
// the ideal), sigma its key's jitter from the window (noise_model.h); every launch delay its
// ideal plus sigma_d z (at least 0). Pauses (gc, data-wait) keep their ideal: they are a cause.
// The step is then replayed as the real step is: in full (the null S) and per dp rank and per
// stage with only that unit drawn (the null of S per dp rank / stage), and per dp rank with only
// that unit fixed (what replacing jitter's slowest rank saves), by the same code, so the
// null has the job's own graph, size and shape. Costs one full replay plus the per-unit runs,
// O(ranks) like the metrics themselves.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "slowdown_metrics.h"

namespace sp::online {
namespace {

// splitmix64: small, fast, and the same draws on every platform (std::normal_distribution's
// are not), so a run's verdicts are reproducible.
struct Draws {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {  // Box-Muller, one of the pair
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
};

// Centres the draws of each key on 1 (factors) or 0 (shifts) over this step's ops: the ideal
// follows each step's own level (IdealConfig::follow_step_level), so the real step's ops deviate
// from their own step's mean, and so must the null's. Transfers (median rule) are not followed.
void centre(const std::vector<int>& key_of, const std::vector<char>& follows, size_t keys, bool multiplicative,
            std::vector<double>* values) {
  std::vector<double> sum(keys, 0.0), n(keys, 0.0);
  for (size_t i = 0; i < values->size(); ++i) {
    if (!follows[i]) continue;
    sum[static_cast<size_t>(key_of[i])] += (*values)[i];
    n[static_cast<size_t>(key_of[i])] += 1;
  }
  for (size_t i = 0; i < values->size(); ++i) {
    if (!follows[i]) continue;
    const size_t k = static_cast<size_t>(key_of[i]);
    const double mean = sum[k] / n[k];
    if (multiplicative) {
      if (mean > 0) (*values)[i] /= mean;
    } else {
      (*values)[i] -= mean;
    }
  }
}

}  // namespace

void SlowdownAnalysis::draw_factors(const StepModel& m, const NoiseSpread& spread, void* draws) {
  Draws& rng = *static_cast<Draws*>(draws);
  const size_t ops = m.ops.size();
  op_factor_.assign(ops, 1.0);
  group_factor_.assign(m.groups.size(), 0.0);
  op_shift_.assign(ops, 0.0);
  // Sized, not zeroed: the loop below writes every op's entries.
  std::vector<int>& key = draw_key_;
  std::vector<int>& delay_key = draw_delay_key_;
  std::vector<char>& follows = draw_follows_;
  std::vector<char>& has_delay = draw_has_delay_;
  key.resize(ops);
  delay_key.resize(ops);
  follows.resize(ops);
  has_delay.resize(ops);
  for (size_t o = 0; o < ops; ++o) {
    const LogicalOp& op = m.ops[o];
    key[o] = op.key;
    delay_key[o] = op.delay_key;
    follows[o] = follow_step_level_ && op.rule == IdealRule::kMean;
    has_delay[o] = op.first_node >= 0 && follow_step_level_;
    const double s = op.rule == IdealRule::kSlotMean ? 0.0 : spread.work_sigma[static_cast<size_t>(op.key)];
    if (s > 0) {
      // A transfer is its group's: one draw per group, shared by its members.
      const int group = op.first_node >= 0 ? m.nodes[static_cast<size_t>(op.first_node)].group : -1;
      if (op.rule == IdealRule::kMedian && group >= 0) {
        if (group_factor_.size() < m.groups.size()) group_factor_.assign(m.groups.size(), 0.0);
        double& g = group_factor_[static_cast<size_t>(group)];
        if (g == 0.0) g = std::exp(s * rng.normal() - 0.5 * s * s);
        op_factor_[o] = g;
      } else {
        op_factor_[o] = std::exp(s * rng.normal() - 0.5 * s * s);
      }
    }
    const double d = op.first_node >= 0 ? spread.delay_sigma[static_cast<size_t>(op.delay_key)] : 0.0;
    if (d > 0) op_shift_[o] = d * rng.normal();
  }
  centre(key, follows, m.ideal_keys.size(), true, &op_factor_);
  const double marker_sigma = spread.delay_sigma[static_cast<size_t>(m.marker_delay_key)];
  marker_shift_.assign(static_cast<size_t>(m.world), 0.0);
  for (double& x : marker_shift_) x = marker_sigma > 0 ? marker_sigma * rng.normal() : 0.0;
  // Launch delays follow the step's level too; the markers share one key.
  centre(delay_key, has_delay, m.delay_keys.size(), false, &op_shift_);
  if (follow_step_level_ && !marker_shift_.empty()) {
    double mean = 0;
    for (double x : marker_shift_) mean += x;
    mean /= static_cast<double>(marker_shift_.size());
    for (double& x : marker_shift_) x -= mean;
  }
}

void SlowdownAnalysis::null_draw(const StepModel& m, const NoiseSpread& spread, uint64_t seed,
                                 NullDraw* out) {
  Draws rng{seed * 0x2545f4914f6cdd1dULL + 1};
  // The draws take the place of the recorded side (work and delay) of every node but the step
  // starts, which keep their offsets. Drawn into arrays of their own, which are swapped into
  // values_ for the replays and back after them: the step's other values are not copied.
  const size_t real = static_cast<size_t>(DelayMode::kReal);
  std::vector<double>& work = null_work_;
  std::vector<double>& delay = null_delay_;
  work.resize(plan_.num_positions());
  delay.resize(plan_.num_positions());
  const auto& ideal_work = values_.work[1];
  const auto& ideal_delay = values_.delay[static_cast<size_t>(DelayMode::kIdeal)];
  draw_factors(m, spread, &rng);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& node = m.nodes[i];
    const auto p = static_cast<size_t>(plan_.position_of[i]);
    if (node.role == NodeRole::kStart) {  // its offset, as in every scenario
      work[p] = values_.work[0][p];
      delay[p] = values_.delay[real][p];
      continue;
    }
    if (node.role == NodeRole::kMarker) {
      work[p] = ideal_work[p];
      delay[p] = std::max(0.0, ideal_delay[p] + marker_shift_[static_cast<size_t>(node.rank)]);
      continue;
    }
    const auto logical = static_cast<size_t>(node.logical);
    work[p] = ideal_work[p] * op_factor_[logical];
    const LogicalOp& op = m.ops[logical];
    delay[p] = op.first_node == static_cast<int>(i) ? std::max(0.0, ideal_delay[p] + op_shift_[logical]) : ideal_delay[p];
  }
  std::swap(values_.work[0], null_work_);
  std::swap(values_.delay[real], null_delay_);
  selection_.reset(values_.num_types, static_cast<size_t>(m.world), true, DelayMode::kReal);
  ++work_.null_replays;
  const double T = other_.run(plan_, values_, selection_);
  // As for the real step: the ideal is never slower than the step it is the ideal of.
  const double ideal = std::max(std::min(ideal_raw_, T), std::numeric_limits<double>::min());
  out->S = T / ideal;
  const ValueSide ideal_side{false, DelayMode::kIdeal}, drawn_side{true, DelayMode::kReal};
  dp_units_.run(plan_, values_, m.rank_dp, m.dp_size, ideal_side, drawn_side, unit_method_, &unit_times_);
  out->dp_S.clear();
  for (double t : unit_times_) out->dp_S.push_back(t / ideal);
  dp_units_.run(plan_, values_, m.rank_dp, m.dp_size, drawn_side, ideal_side, unit_method_, &unit_times_);
  double fastest = T;
  for (double t : unit_times_) fastest = std::min(fastest, t);
  out->best_fix_gain = (T - fastest) / ideal;
  out->stage_S.clear();
  if (m.pp_size > 1) {
    stage_units_.run(plan_, values_, m.rank_stage, m.pp_size, ideal_side, drawn_side, unit_method_, &unit_times_);
    for (double t : unit_times_) out->stage_S.push_back(t / ideal);
  } else {
    out->stage_S.assign(1, out->S);
  }
  std::swap(values_.work[0], null_work_);
  std::swap(values_.delay[real], null_delay_);
}

}  // namespace sp::online
