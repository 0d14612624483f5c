// Attribution of a slowdown to groups of ops: for each dp rank, stage and op type, replay the
// ideal timeline with only that group's cells set back to their real values, and report the
// slowdown that remains (overall, and per step).
//
// The blocking variant puts back real durations into the ideal timeline; the launch variant
// puts back real launch delays into the no-delay timeline, and gives the first op of each
// stage's step (forward-compute 0 on stage 0, forward-recv 0 elsewhere) its own group
// "first-op", where data loading shows up.
#include <algorithm>
#include <string>

#include "analysis_state.h"
#include "pandas_numerics.h"

namespace sp::whatif {
namespace {

struct Group {
  std::string key;
  std::vector<uint8_t> node_mask;
  std::vector<uint8_t> lane_mask;  // empty: all lanes
};

// The artifact's op type column after it renames the pipeline p2p types.
std::string renamed_type(OpType t) {
  switch (t) {
    case OpType::kForwardSend:
    case OpType::kForwardRecv: return "forward-pp-comm";
    case OpType::kBackwardSend:
    case OpType::kBackwardRecv: return "backward-pp-comm";
    default: return std::string(op_type_name(t));
  }
}

std::string optype_key(const LaneModel& m, size_t v, bool launch) {
  const OpType t = m.node_optype[v];
  if (launch && m.node_seq_id[v] == 0 &&
      ((t == OpType::kForwardCompute && m.node_stage[v] == 0) ||
       (t == OpType::kForwardRecv && m.node_stage[v] > 0))) {
    return "first-op";
  }
  return renamed_type(t);
}

void sort_descending(std::vector<GroupValue>& v) {
  // The artifact sorts with Python's stable sort on -value: ties keep the groups' order.
  std::stable_sort(v.begin(), v.end(),
                   [](const GroupValue& a, const GroupValue& b) { return a.value > b.value; });
}

// True when, in every step, all lanes of every node hold the same value (the ideal timeline:
// every replica and step gets the same typical durations).
bool uniform_within_steps(std::span<const double> cells, size_t lanes_per_step) {
  for (size_t base = 0; base < cells.size(); base += lanes_per_step) {
    for (size_t l = 1; l < lanes_per_step; ++l) {
      if (cells[base + l] != cells[base]) return false;
    }
  }
  return true;
}

Decomposition run_groups(Analysis::State& st, const std::vector<Group>& groups, bool launch,
                         const std::vector<int64_t>& target_steps) {
  const LaneModel& m = st.model;
  const size_t L = m.lanes.num_lanes();
  const auto dp = static_cast<size_t>(m.dp_size);
  // When the base is the same for all replicas of a step, a group that changes only some
  // replicas (a dp rank) needs only those lanes plus one untouched representative per step:
  // the other untouched lanes replay identically, and every maximum over the step sees the
  // same values. Exact, and dp_size/2 times less work.
  // (The launch variant's base delays are zeros: uniform.)
  const bool compress = dp > 2 && uniform_within_steps(launch ? st.work_nodelay : st.work_ideal, dp);
  std::vector<uint32_t> subset;
  const auto& step_ideal = launch ? st.sim_nodelay : st.sim_ideal;
  const double mean_ideal = pandas_series_mean(std::span<const double>(step_ideal));
  const size_t S = m.steps.size();

  std::vector<std::vector<double>> per_step_ratio(groups.size(), std::vector<double>(S));
  Decomposition out;
  std::vector<double> step_time(S);
  for (size_t g = 0; g < groups.size(); ++g) {
    SimOverlay ov;
    if (launch) {
      ov.launch_delay = st.launch_base;
    } else {
      ov.work = st.work_base;
    }
    ov.node_mask = groups[g].node_mask;
    ov.lane_mask = groups[g].lane_mask;
    SimInput in;
    in.work = launch ? st.work_nodelay : st.work_ideal;
    if (launch) in.launch_delay = st.zeros;
    in.overlay = &ov;
    in.want_cells = false;
    subset.clear();
    if (compress && !groups[g].lane_mask.empty()) {
      for (size_t l = 0; l < L; l += dp) {
        // The group's lanes of this step, and the first lane outside it.
        bool have_rep = false;
        for (size_t k = 0; k < dp; ++k) {
          const bool in_group = groups[g].lane_mask[l + k] != 0;
          if (in_group || !have_rep) subset.push_back(static_cast<uint32_t>(l + k));
          have_rep |= !in_group;
        }
      }
      in.lanes = subset;
    }
    const SimResult r = st.sim.run(in);
    for (size_t s = 0; s < S; ++s) {
      step_time[s] = r.step_end[s];
      per_step_ratio[g][s] = step_time[s] / step_ideal[s];
    }
    out.overall.push_back({groups[g].key,
                           pandas_series_mean(std::span<const double>(step_time)) / mean_ideal});
  }
  sort_descending(out.overall);
  for (int64_t step : target_steps) {
    const auto s = static_cast<size_t>(std::lower_bound(m.steps.begin(), m.steps.end(), step) -
                                       m.steps.begin());
    StepAttribution sa{step, {}};
    for (size_t g = 0; g < groups.size(); ++g) sa.groups.push_back({groups[g].key, per_step_ratio[g][s]});
    sort_descending(sa.groups);
    out.per_step.push_back(std::move(sa));
  }
  return out;
}

}  // namespace

void decompose_all(Analysis::State& st, bool launch, const std::vector<int64_t>& target_steps) {
  const LaneModel& m = st.model;
  const size_t N = m.graph.num_nodes();
  const size_t L = m.lanes.num_lanes();
  const auto dp = static_cast<size_t>(m.dp_size);

  // By op type. The artifact renames the p2p types (forward/backward-pp-comm) with a mapping
  // over its categorical column: when the renamed categories stay distinct (no pipeline p2p,
  // e.g. pp = 1), the column stays categorical and pandas groups by every category in category
  // order (the type names sorted, then "first-op", which the blocking variant leaves empty:
  // its slowdown is the ideal's own). Otherwise the column becomes plain strings, grouped in
  // sorted order, observed groups only.
  std::vector<std::string> keys;
  for (size_t v = 0; v < N; ++v) keys.push_back(optype_key(m, v, launch));
  std::vector<OpType> present(m.node_optype.begin(), m.node_optype.end());
  std::sort(present.begin(), present.end(), [](OpType a, OpType b) {
    return op_type_name(a) < op_type_name(b);
  });
  present.erase(std::unique(present.begin(), present.end()), present.end());
  std::vector<std::string> renamed;
  for (OpType t : present) renamed.push_back(renamed_type(t));
  std::vector<std::string> distinct = renamed;
  std::sort(distinct.begin(), distinct.end());
  const bool categorical = std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end();
  if (categorical) {
    distinct = renamed;  // category order
    distinct.push_back("first-op");
  } else {
    distinct = keys;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  }
  std::vector<Group> by_optype;
  for (const auto& k : distinct) {
    Group g{k, std::vector<uint8_t>(N, 0), {}};
    for (size_t v = 0; v < N; ++v) g.node_mask[v] = keys[v] == k ? 1 : 0;
    by_optype.push_back(std::move(g));
  }
  std::vector<Group> by_dp;
  for (size_t d = 0; d < dp; ++d) {
    Group g{std::to_string(d), std::vector<uint8_t>(N, 1), std::vector<uint8_t>(L, 0)};
    for (size_t l = d; l < L; l += dp) g.lane_mask[l] = 1;
    by_dp.push_back(std::move(g));
  }
  std::vector<Group> by_stage;
  for (int32_t s = 0; s < m.pp_size; ++s) {
    Group g{std::to_string(s), std::vector<uint8_t>(N, 0), {}};
    for (size_t v = 0; v < N; ++v) g.node_mask[v] = m.node_stage[v] == s ? 1 : 0;
    by_stage.push_back(std::move(g));
  }

  AnalysisResult& r = st.result;
  if (launch) {
    r.launch_by_optype = run_groups(st, by_optype, true, target_steps);
    r.launch_by_dp_rank = run_groups(st, by_dp, true, target_steps);
    r.launch_by_stage = run_groups(st, by_stage, true, target_steps);
  } else {
    r.blocking_by_optype = run_groups(st, by_optype, false, target_steps);
    r.blocking_by_dp_rank = run_groups(st, by_dp, false, target_steps);
    r.blocking_by_stage = run_groups(st, by_stage, false, target_steps);
  }
}

}  // namespace sp::whatif
