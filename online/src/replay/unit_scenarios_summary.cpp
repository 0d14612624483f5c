#include "unit_scenarios.h"

#include <algorithm>
#include <limits>

namespace sp::online {
namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

double max2(double a, double b) { return b > a ? b : a; }

}  // namespace

void UnitScenarios::Top2::add(double v, int32_t unit) {
  if (unit == best_unit) {
    best = max2(best, v);
  } else if (v > best) {
    second = best;
    best = v;
    best_unit = unit;
  } else {
    second = max2(second, v);
  }
}

// Positions by unit, and which groups are shared between units.
void UnitScenarios::layout(const ReplayPlan& plan, const std::vector<int32_t>& unit_of_rank,
                           int32_t units) {
  const size_t n = plan.num_positions();
  units_ = units;
  layout_units_ = units;
  layout_unit_of_rank_ = unit_of_rank;
  layout_rank_at_ = plan.rank_at;
  layout_unit_begin_ = plan.unit_begin;
  unit_at_.resize(n);
  unit_pos_begin_.assign(static_cast<size_t>(units) + 1, 0);
  for (size_t p = 0; p < n; ++p) {
    unit_at_[p] = unit_of_rank[static_cast<size_t>(plan.rank_at[p])];
    ++unit_pos_begin_[static_cast<size_t>(unit_at_[p]) + 1];
  }
  for (int32_t u = 0; u < units; ++u) unit_pos_begin_[static_cast<size_t>(u) + 1] += unit_pos_begin_[static_cast<size_t>(u)];
  unit_pos_.resize(n);
  std::vector<int32_t>& fill = edge_begin_;  // scratch until summarise() fills it
  fill.assign(unit_pos_begin_.begin(), unit_pos_begin_.end() - 1);
  for (size_t p = 0; p < n; ++p) unit_pos_[static_cast<size_t>(fill[static_cast<size_t>(unit_at_[p])]++)] = static_cast<int32_t>(p);

  shared_of_.assign(plan.num_units(), -1);
  shared_unit_.clear();
  for (size_t k = 0; k < plan.num_units(); ++k) {
    const int32_t b = plan.unit_begin[k], e = plan.unit_begin[k + 1];
    bool shared = false;
    for (int32_t p = b + 1; p < e && !shared; ++p) shared = unit_at_[static_cast<size_t>(p)] != unit_at_[static_cast<size_t>(b)];
    if (!shared) continue;
    shared_of_[k] = static_cast<int32_t>(shared_unit_.size());
    shared_unit_.push_back(static_cast<int32_t>(k));
  }
  // The distinct units of each shared group.
  std::vector<int32_t> seen(static_cast<size_t>(units), -1);
  members_begin_.assign(1, 0);
  members_.clear();
  for (size_t s = 0; s < shared_unit_.size(); ++s) {
    const auto k = static_cast<size_t>(shared_unit_[s]);
    for (int32_t p = plan.unit_begin[k]; p < plan.unit_begin[k + 1]; ++p) {
      const int32_t u = unit_at_[static_cast<size_t>(p)];
      if (seen[static_cast<size_t>(u)] == static_cast<int32_t>(s)) continue;
      seen[static_cast<size_t>(u)] = static_cast<int32_t>(s);
      members_.push_back(u);
    }
    members_begin_.push_back(static_cast<int32_t>(members_.size()));
  }
}

// Positions the summary's sweeps will visit: every unit once from its start, and each unit of a
// shared group from that group on. Counting stops past `limit`.
size_t UnitScenarios::sweep_cost(const ReplayPlan& plan, size_t limit) const {
  size_t cost = plan.num_positions();
  for (size_t s = 0; s < shared_unit_.size(); ++s) {
    const auto k = static_cast<size_t>(shared_unit_[s]);
    for (int32_t i = members_begin_[s]; i < members_begin_[s + 1]; ++i) {
      const int32_t u = members_[static_cast<size_t>(i)];
      const int32_t* b = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u)];
      const int32_t* e = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u) + 1];
      cost += static_cast<size_t>(e - std::lower_bound(b, e, plan.unit_begin[k]));
      if (cost > limit) return cost;
    }
  }
  return cost;
}

// Sweeps unit u with the base values: from its step start (entry < 0, absolute times) or from
// shared group `entry`'s launch taken as time 0. A shared group met on the way records the
// latest start of u's members in it (found_) and is not passed; a step-end marker records its
// end minus its rank's start offset (found_ at the step-end index).
void UnitScenarios::sweep(const ReplayPlan& plan, int32_t u, int32_t entry) {
  if (++sweep_id_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0u);
    sweep_id_ = 1;
  }
  const auto sink = static_cast<int32_t>(shared_unit_.size());
  auto record = [this](int32_t x, double v) {
    if (v == kNone) return;  // not reachable from where this sweep began
    if (found_[static_cast<size_t>(x)] == kNone) found_list_.push_back(x);
    found_[static_cast<size_t>(x)] = max2(found_[static_cast<size_t>(x)], v);
  };
  auto start_of = [&](int32_t p) {
    const int32_t d0 = plan.dep_begin[static_cast<size_t>(p)], d1 = plan.dep_begin[static_cast<size_t>(p) + 1];
    if (d0 == d1) return entry < 0 ? delay_base_[static_cast<size_t>(p)] + 0.0 : kNone;
    double s = kNone;
    for (int32_t k = d0; k < d1; ++k) {
      const auto d = static_cast<size_t>(plan.deps[static_cast<size_t>(k)]);
      if (stamp_[d] == sweep_id_) s = max2(s, value_[d]);
    }
    return s + delay_base_[static_cast<size_t>(p)];
  };
  const int32_t* pos = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u)];
  const int32_t* pos_end = unit_pos_.data() + unit_pos_begin_[static_cast<size_t>(u) + 1];
  if (entry >= 0) pos = std::lower_bound(pos, pos_end, plan.unit_begin[static_cast<size_t>(shared_unit_[static_cast<size_t>(entry)])]);
  while (pos < pos_end) {
    const int32_t k = plan.unit_of[static_cast<size_t>(*pos)];
    const int32_t* run = pos;
    while (pos < pos_end && plan.unit_of[static_cast<size_t>(*pos)] == k) ++pos;
    const int32_t s = shared_of_[static_cast<size_t>(k)];
    double latest = kNone;
    if (entry < 0 || s != entry) {
      for (const int32_t* q = run; q < pos; ++q) latest = max2(latest, start_of(*q));
    } else {
      latest = 0.0;  // the entry group's launch
    }
    if (s >= 0 && s != entry) record(s, latest);
    for (const int32_t* q = run; q < pos; ++q) {
      const auto p = static_cast<size_t>(*q);
      stamp_[p] = sweep_id_;
      value_[p] = s >= 0 && s != entry ? kNone : latest + work_base_[p];
      const auto r = static_cast<size_t>(plan.rank_at[p]);
      if (plan.marker_at[r] == *q) {
        record(sink, value_[p] - (delay_base_[static_cast<size_t>(plan.start_at[r])] + 0.0));
      }
    }
  }
}

// Folds the edges into shared group `from` that the sweeps since the last call found.
void UnitScenarios::add_edges(int32_t from) {
  for (int32_t x : pending_list_) {
    raw_edges_.push_back({x, {from, pending_[static_cast<size_t>(x)]}});
    pending_[static_cast<size_t>(x)] = {kNone, kNone, -1};
  }
  pending_list_.clear();
}

// The per-step summary: a(x) and W(g, x) over all units, with base values.
void UnitScenarios::summarise(const ReplayPlan& plan) {
  const size_t slots = shared_unit_.size() + 1;  // shared groups, then the step end
  value_.resize(plan.num_positions());
  stamp_.resize(plan.num_positions(), 0u);
  found_.assign(slots, kNone);
  found_list_.clear();
  a_.assign(slots, {kNone, kNone, -1});
  pending_.assign(slots, {kNone, kNone, -1});
  pending_list_.clear();
  raw_edges_.clear();
  auto take_found = [this](std::vector<Top2>* into, int32_t u, bool list) {
    for (int32_t x : found_list_) {
      Top2& t = (*into)[static_cast<size_t>(x)];
      if (list && t.best_unit < 0) pending_list_.push_back(x);
      t.add(found_[static_cast<size_t>(x)], u);
      found_[static_cast<size_t>(x)] = kNone;
    }
    found_list_.clear();
  };
  for (int32_t u = 0; u < units_; ++u) {
    sweep(plan, u, -1);
    take_found(&a_, u, false);
  }
  for (size_t s = 0; s < shared_unit_.size(); ++s) {
    for (int32_t i = members_begin_[s]; i < members_begin_[s + 1]; ++i) {
      const int32_t u = members_[static_cast<size_t>(i)];
      sweep(plan, u, static_cast<int32_t>(s));
      take_found(&pending_, u, true);
    }
    add_edges(static_cast<int32_t>(s));
  }
  // In-edges by target, in the order found (targets' sources are earlier shared groups).
  edge_begin_.assign(slots + 1, 0);
  for (const RawEdge& e : raw_edges_) ++edge_begin_[static_cast<size_t>(e.to) + 1];
  for (size_t x = 0; x < slots; ++x) edge_begin_[x + 1] += edge_begin_[x];
  edges_.resize(raw_edges_.size());
  std::vector<int32_t> fill(edge_begin_.begin(), edge_begin_.end() - 1);
  for (const RawEdge& e : raw_edges_) edges_[static_cast<size_t>(fill[static_cast<size_t>(e.to)]++)] = e.edge;
  stats_.edges = edges_.size();
}

}  // namespace sp::online
