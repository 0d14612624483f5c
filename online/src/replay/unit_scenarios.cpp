// The unit scenarios of one step: choosing the method, and the per-unit evaluation (the
// per-step summary it needs is built in unit_scenarios_summary.cpp).
#include <algorithm>
#include <cstring>
#include <limits>

#include "unit_scenarios.h"

namespace sp::online {
namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

double max2(double a, double b) { return b > a ? b : a; }

void side_values(const PlanValues& v, ValueSide side, const double** work, const double** delay) {
  *work = v.work[side.real_work ? 0 : 1].data();
  *delay = v.delay[static_cast<size_t>(side.delay)].data();
}

}  // namespace

void UnitScenarios::run(const ReplayPlan& plan, const PlanValues& values,
                        const std::vector<int32_t>& unit_of_rank, int32_t units, ValueSide base,
                        ValueSide alt, UnitMethod method, std::vector<double>* step_times) {
  stats_ = {};
  step_times->assign(static_cast<size_t>(units), 0.0);
  if (!same_layout(plan, unit_of_rank, units)) {
    layout(plan, unit_of_rank, units);
    summary_valid_ = false;
  }
  stats_.shared_groups = shared_unit_.size();
  // Both methods cost about one visit per position; a full replay per unit visits them all.
  // The boundary method visits each unit once per scenario plus the sweeps, plus the shared
  // groups and their edges once per unit; its visits cost about twice as much (the sweeps
  // check which values are valid), hence the factor 2.
  const size_t n = plan.num_positions();
  const size_t full = n * static_cast<size_t>(units);
  const size_t s = shared_unit_.size();
  const size_t fixed = n + units * s;  // per step besides the sweeps
  // Counting the sweeps stops once they alone would make the boundary method the dearer.
  const size_t limit = method == UnitMethod::kBoundary ? SIZE_MAX : full / 2 > fixed ? full / 2 - fixed : 0;
  const size_t sweeps = sweep_cost(plan, limit);
  bool boundary = method == UnitMethod::kBoundary ||
                  (method == UnitMethod::kAuto && 2 * (sweeps + fixed) < full);
  if (boundary) {
    side_values(values, base, &work_base_, &delay_base_);
    if (!same_summary(n)) {
      summarise(plan);
      remember_summary(n);
    }
    stats_.edges = edges_.size();
    boundary = method == UnitMethod::kBoundary || 2 * (sweeps + n + units * (s + edges_.size())) < full;
  }
  if (!boundary) {
    stats_.full_replays = static_cast<size_t>(units);
    full_replays(plan, values, units, base, alt, step_times);
    return;
  }
  stats_.boundary = true;
  stats_.sweep_positions = sweeps;
  side_values(values, alt, &work_alt_, &delay_alt_);
  launch_.assign(s, kNone);
  for (int32_t u = 0; u < units; ++u) (*step_times)[static_cast<size_t>(u)] = unit_step_time(plan, u);
}

// The step time of unit u's scenario: u's positions replayed with the alternative values, in
// replay order, each shared group's launch being the max of u's members' starts and of what
// every other unit brings to it (the summary's a and W without u).
double UnitScenarios::unit_step_time(const ReplayPlan& plan, int32_t u) {
  const auto s_count = static_cast<int32_t>(shared_unit_.size());
  auto others = [&](int32_t x) {
    double v = a_[static_cast<size_t>(x)].without(u);
    for (int32_t e = edge_begin_[static_cast<size_t>(x)]; e < edge_begin_[static_cast<size_t>(x) + 1]; ++e) {
      const Edge& edge = edges_[static_cast<size_t>(e)];
      v = max2(v, launch_[static_cast<size_t>(edge.from)] + edge.w.without(u));
    }
    return v;
  };
  auto start_of = [&](int32_t p) {
    const int32_t d0 = plan.dep_begin[static_cast<size_t>(p)], d1 = plan.dep_begin[static_cast<size_t>(p) + 1];
    if (d0 == d1) return delay_alt_[static_cast<size_t>(p)] + 0.0;
    double s = value_[static_cast<size_t>(plan.deps[static_cast<size_t>(d0)])];
    for (int32_t k = d0 + 1; k < d1; ++k) s = max2(s, value_[static_cast<size_t>(plan.deps[static_cast<size_t>(k)])]);
    return s + delay_alt_[static_cast<size_t>(p)];
  };
  const int32_t* pos = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u)];
  const int32_t* pos_end = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u) + 1];
  double t = 0;
  int32_t next_shared = 0;
  constexpr int32_t kEnd = std::numeric_limits<int32_t>::max();
  while (pos < pos_end || next_shared < s_count) {
    const int32_t k_own = pos < pos_end ? plan.unit_of[static_cast<size_t>(*pos)] : kEnd;
    const int32_t k_shared = next_shared < s_count ? shared_unit_[static_cast<size_t>(next_shared)] : kEnd;
    const int32_t k = std::min(k_own, k_shared);
    double latest = k == k_shared ? others(next_shared) : kNone;
    const int32_t* run = pos;
    if (k == k_own) {
      while (pos < pos_end && plan.unit_of[static_cast<size_t>(*pos)] == k) {
        latest = max2(latest, start_of(*pos));
        ++pos;
      }
    }
    if (k == k_shared) launch_[static_cast<size_t>(next_shared++)] = latest;
    for (const int32_t* q = run; q < pos; ++q) {
      const auto p = static_cast<size_t>(*q);
      value_[p] = latest + work_alt_[p];
      const auto r = static_cast<size_t>(plan.rank_at[p]);
      if (plan.marker_at[r] == *q) {
        t = max2(t, value_[p] - (delay_alt_[static_cast<size_t>(plan.start_at[r])] + 0.0));
      }
    }
  }
  return max2(t, others(s_count));
}

bool UnitScenarios::same_layout(const ReplayPlan& plan, const std::vector<int32_t>& unit_of_rank,
                                int32_t units) const {
  return units == layout_units_ && unit_of_rank == layout_unit_of_rank_ && plan.rank_at == layout_rank_at_ &&
         plan.unit_begin == layout_unit_begin_;
}

bool UnitScenarios::same_summary(size_t n) const {
  return summary_valid_ && summary_work_.size() == n && summary_delay_.size() == n &&
         std::memcmp(summary_work_.data(), work_base_, n * sizeof(double)) == 0 &&
         std::memcmp(summary_delay_.data(), delay_base_, n * sizeof(double)) == 0;
}

void UnitScenarios::remember_summary(size_t n) {
  summary_work_.assign(work_base_, work_base_ + n);
  summary_delay_.assign(delay_base_, delay_base_ + n);
  summary_valid_ = true;
}

void UnitScenarios::full_replays(const ReplayPlan& plan, const PlanValues& values, int32_t units,
                                 ValueSide base, ValueSide alt, std::vector<double>* step_times) {
  lanes_.resize(static_cast<size_t>(units));
  for (int32_t u = 0; u < units; ++u) lanes_[static_cast<size_t>(u)] = {base, u, alt};
  batch_.run(plan, values, unit_at_, lanes_, step_times);
}

}  // namespace sp::online
