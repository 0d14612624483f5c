#include "scenario_values.h"

#include <algorithm>

namespace sp::online {
namespace {

// Per op: the total own time of its rank's ops under its key, for the pause-like ops whose
// ideal is per (rank, step) slot (kSlotMean); 0 for the others.
std::vector<double> slot_totals(const StepModel& m) {
  std::vector<double> total(m.ops.size(), 0.0);
  std::vector<int> slot_ops;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    if (m.ops[i].rule == IdealRule::kSlotMean) slot_ops.push_back(static_cast<int>(i));
  }
  auto same_slot = [&m](int a, int b) {
    const LogicalOp& x = m.ops[static_cast<size_t>(a)];
    const LogicalOp& y = m.ops[static_cast<size_t>(b)];
    return x.rank == y.rank && x.key == y.key;
  };
  // Sorted by (rank, key), stable so that each slot sums its ops in op order.
  std::stable_sort(slot_ops.begin(), slot_ops.end(), [&m](int a, int b) {
    const LogicalOp& x = m.ops[static_cast<size_t>(a)];
    const LogicalOp& y = m.ops[static_cast<size_t>(b)];
    return x.rank != y.rank ? x.rank < y.rank : x.key < y.key;
  });
  for (size_t i = 0; i < slot_ops.size();) {
    size_t j = i;
    double sum = 0;
    for (; j < slot_ops.size() && same_slot(slot_ops[i], slot_ops[j]); ++j) sum += m.ops[static_cast<size_t>(slot_ops[j])].own;
    for (; i < j; ++i) total[static_cast<size_t>(slot_ops[i])] = sum;
  }
  return total;
}

}  // namespace

void compute_node_values(const StepModel& m, const Ideals& ideals, NodeValues* out) {
  NodeValues& v = *out;
  const size_t n = m.nodes.size();
  // Sized, not zeroed: the loop below writes every node's four values.
  v.real_work.resize(n);
  v.real_delay.resize(n);
  v.ideal_work.resize(n);
  v.ideal_delay.resize(n);
  std::vector<int> pieces(m.ops.size(), 0);
  for (const Node& node : m.nodes) {
    if (node.logical >= 0) ++pieces[static_cast<size_t>(node.logical)];
  }
  const std::vector<double> slot_total = slot_totals(m);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = m.nodes[i];
    v.real_work[i] = node.duration;
    v.real_delay[i] = node.launch_delay;
    v.ideal_delay[i] = node.launch_delay;
    if (node.role == NodeRole::kStart) {
      v.ideal_work[i] = 0;
      continue;  // its delay is the rank's offset: the same in every scenario
    }
    if (node.role == NodeRole::kMarker) {
      v.ideal_work[i] = 0;
      v.ideal_delay[i] = ideals.delay[static_cast<size_t>(m.marker_delay_key)];
      continue;
    }
    const auto logical = static_cast<size_t>(node.logical);
    const LogicalOp& op = m.ops[logical];
    const double target = ideals.duration[static_cast<size_t>(op.key)];
    if (op.first_node == static_cast<int>(i)) {
      v.ideal_delay[i] = ideals.delay[static_cast<size_t>(op.delay_key)];
    }
    if (node.role == NodeRole::kComm) {
      v.ideal_work[i] = target;
      continue;
    }
    const double own = op.rule == IdealRule::kSlotMean ? slot_total[logical] : op.own;
    if (own > 0) {
      v.ideal_work[i] = node.duration * target / own;
    } else {
      v.ideal_work[i] = op.rule == IdealRule::kSlotMean ? node.duration : target / pieces[logical];
    }
  }
}

void gather_plan_values(const StepModel& m, const NodeValues& v, const ReplayPlan& plan,
                        PlanValues* out) {
  PlanValues& pv = *out;
  const size_t n = plan.num_positions();
  pv.num_types = m.type_names.size();
  for (auto& w : pv.work) w.resize(n);
  for (auto& d : pv.delay) d.resize(n);
  pv.type_at.resize(n);
  // In node order (positions are scattered over the nodes).
  for (size_t i = 0; i < n; ++i) {
    const auto p = static_cast<size_t>(plan.position_of[i]);
    const Node& node = m.nodes[i];
    pv.work[0][p] = v.real_work[i];
    pv.work[1][p] = v.ideal_work[i];
    pv.delay[static_cast<size_t>(DelayMode::kReal)][p] = v.real_delay[i];
    pv.delay[static_cast<size_t>(DelayMode::kIdeal)][p] = v.ideal_delay[i];
    const bool start = node.role == NodeRole::kStart;
    pv.delay[static_cast<size_t>(DelayMode::kZero)][p] = start ? v.real_delay[i] : 0.0;
    pv.delay[static_cast<size_t>(DelayMode::kRecorded)][p] = v.real_delay[i];
    pv.type_at[p] = node.logical >= 0 ? m.ops[static_cast<size_t>(node.logical)].type : static_cast<int32_t>(pv.num_types);
  }
}

void Selection::reset(size_t num_types, size_t world, bool real_work, DelayMode delay) {
  type_real.assign(num_types + 1, 0);
  rank_real.assign(world, real_work ? 1 : 0);
  rank_delay.assign(world, static_cast<uint8_t>(delay));
}

void select_values(const ReplayPlan& plan, const PlanValues& values, const Selection& s,
                   std::vector<double>* work, std::vector<double>* delay) {
  const size_t n = plan.num_positions();
  work->resize(n);
  delay->resize(n);
  for (size_t p = 0; p < n; ++p) {
    const auto r = static_cast<size_t>(plan.rank_at[p]);
    const bool real = s.type_real[values.type_at[p]] != 0 || s.rank_real[r] != 0;
    (*work)[p] = values.work[real ? 0 : 1][p];
    (*delay)[p] = values.delay[s.rank_delay[r]][p];
  }
}

}  // namespace sp::online
