#include "lane_oracle.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "lane_replayer.h"
#include "replay/scenario_values.h"

namespace sp::online::testing {
namespace {

enum class Delay : uint8_t { kReal, kIdeal, kZero };

constexpr size_t kLanesPerRun = 32;

struct Lane {
  std::function<bool(const Node&)> real_work;  // keep the recorded duration of this node?
  std::function<Delay(const Node&)> delay;
  // Where each rank starts the step: as recorded (the real replays), or as it would after an
  // ideal previous step (every what-if scenario; see settle_start_offsets).
  bool real_start = false;
};

LaneInputs build_lanes(const StepModel& m, const NodeValues& v, const std::vector<Lane>& lanes) {
  LaneInputs in;
  in.lanes = lanes.size();
  const size_t n = m.nodes.size();
  in.work.assign(n * in.lanes, 0.0);
  in.delay.assign(n * in.lanes, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t l = 0; l < in.lanes; ++l) {
      const size_t cell = i * in.lanes + l;
      in.work[cell] = lanes[l].real_work(m.nodes[i]) ? v.real_work[i] : v.ideal_work[i];
      const Delay mode = m.nodes[i].role == NodeRole::kStart
                             ? (lanes[l].real_start ? Delay::kReal : Delay::kIdeal)
                             : lanes[l].delay(m.nodes[i]);
      switch (mode) {
        case Delay::kReal: in.delay[cell] = v.real_delay[i]; break;
        case Delay::kIdeal: in.delay[cell] = v.ideal_delay[i]; break;
        case Delay::kZero: in.delay[cell] = 0; break;
      }
    }
  }
  return in;
}

// Where each rank would start this step had the previous step been ideal: its step starts at its
// previous step mark, so the offsets between ranks are those of the ideal step's ends. Why: in a
// pipeline the stages start a step at different times (the last stage finishes the previous one
// first and waits for the first micro-batch), and a straggler moves those offsets; replayed from
// the recorded offsets the ideal step would still carry the previous step's straggling (a slow
// stage-0 rank starts its stage late, and the ideal waits for it; in data parallel a straggler's
// slow optimizer makes it start the next step late). One replay of the ideal from
// the recorded offsets gives the ideal ends; they depend on when the pipeline's first stage
// starts, not on the others, so one pass settles them.
void settle_start_offsets(const StepModel& m, StepReplayer* replayer, NodeValues* v) {
  const Lane ideal{[](const Node&) { return false; }, [](const Node&) { return Delay::kIdeal; }, true};
  const LaneOutputs o = replayer->run(build_lanes(m, *v, {ideal}), {0});
  double earliest = std::numeric_limits<double>::infinity();
  for (int marker : m.markers) earliest = std::min(earliest, o.end[static_cast<size_t>(marker)]);
  for (int r = 0; r < m.world; ++r) {
    v->ideal_delay[static_cast<size_t>(m.starts[static_cast<size_t>(r)])] =
        o.end[static_cast<size_t>(m.markers[static_cast<size_t>(r)])] - earliest;
  }
}

// Share of the recoverable slowdown (T - T_ideal) that a fix-only scenario recovers.
double share(double T, double T_fixed, double T_ideal) {
  const double gap = T - T_ideal;
  if (!(gap > 1e-9 * std::max(1.0, T))) return 0;
  return (T - T_fixed) / gap;
}

// The scenarios, one lane each, and where each family starts.
struct Scenarios {
  std::vector<Lane> lanes;
  size_t first_type = 0, first_dp = 0, first_stage = 0, first_fix_stage = 0, all_real = 0, first_fix_dp = 0;
};

Scenarios scenarios(const StepModel& m) {
  auto type_of = [&m](const Node& n) { return n.logical >= 0 ? m.ops[static_cast<size_t>(n.logical)].type : -1; };
  auto always = [](const Node&) { return true; };
  auto never = [](const Node&) { return false; };
  auto real_delay = [](const Node&) { return Delay::kReal; };
  auto ideal_delay = [](const Node&) { return Delay::kIdeal; };
  Scenarios sc;
  std::vector<Lane>& lanes = sc.lanes;
  lanes.push_back({always, real_delay, true});                            // 0: real
  lanes.push_back({always, [](const Node&) { return Delay::kZero; }, true});  // 1: no launch delay
  lanes.push_back({never, ideal_delay});                                  // 2: ideal
  sc.first_type = lanes.size();
  const int num_types = static_cast<int>(m.type_names.size());
  for (int t = 0; t < num_types; ++t) {
    lanes.push_back({[t, type_of](const Node& n) { return type_of(n) == t; }, ideal_delay});
  }
  lanes.push_back({never, real_delay});  // launch delays put back
  sc.first_dp = lanes.size();
  auto in_dp = [&m](int d) { return [&m, d](const Node& n) { return m.rank_dp[static_cast<size_t>(n.rank)] == d; }; };
  auto in_stage = [&m](int p) { return [&m, p](const Node& n) { return m.rank_stage[static_cast<size_t>(n.rank)] == p; }; };
  for (int d = 0; d < m.dp_size; ++d) {
    auto sel = in_dp(d);
    lanes.push_back({sel, [sel](const Node& n) { return sel(n) ? Delay::kReal : Delay::kIdeal; }});
  }
  sc.first_stage = lanes.size();
  for (int p = 0; p < m.pp_size; ++p) {
    auto sel = in_stage(p);
    lanes.push_back({sel, [sel](const Node& n) { return sel(n) ? Delay::kReal : Delay::kIdeal; }});
  }
  sc.first_fix_stage = lanes.size();
  for (int p = 0; p < m.pp_size && m.pp_size > 1; ++p) {
    auto sel = in_stage(p);
    lanes.push_back({[sel](const Node& n) { return !sel(n); },
                     [sel](const Node& n) { return sel(n) ? Delay::kIdeal : Delay::kReal; }});
  }
  // The fix-only dp ranks' gains compare with every op real from the same start offsets.
  sc.all_real = lanes.size();
  lanes.push_back({always, real_delay});
  sc.first_fix_dp = lanes.size();
  for (int d = 0; d < m.dp_size; ++d) {
    auto sel = in_dp(d);
    lanes.push_back({[sel](const Node& n) { return !sel(n); },
                     [sel](const Node& n) { return sel(n) ? Delay::kIdeal : Delay::kReal; }});
  }
  return sc;
}

// Replayed in batches of lanes, so that memory stays proportional to the graph, not to
// graph x (dp + pp) scenarios, in a large job. The first batch holds lanes 0 (real) and 2
// (ideal), whose per-node times the timeline needs: it is returned, and every step time.
LaneOutputs replay_all(const StepModel& m, const NodeValues& values, const std::vector<Lane>& lanes,
                       bool want_timeline, StepReplayer* replayer, std::vector<double>* step_time) {
  LaneOutputs first_batch;
  const std::vector<size_t> timeline_lanes = want_timeline ? std::vector<size_t>{0, 2} : std::vector<size_t>{};
  for (size_t begin = 0; begin < lanes.size(); begin += kLanesPerRun) {
    const size_t end = std::min(lanes.size(), begin + kLanesPerRun);
    const std::vector<Lane> batch(lanes.begin() + static_cast<std::ptrdiff_t>(begin),
                                  lanes.begin() + static_cast<std::ptrdiff_t>(end));
    LaneOutputs o = replayer->run(build_lanes(m, values, batch),
                                  begin == 0 ? timeline_lanes : std::vector<size_t>{});
    step_time->insert(step_time->end(), o.step_time.begin(), o.step_time.end());
    if (begin == 0) first_batch = std::move(o);
  }
  return first_batch;
}

// S, S_t, the dp / stage scores, the fix-stage shares, the fix-dp gains and S_w from the lanes'
// step times.
void scores(const StepModel& m, const Scenarios& sc, const std::vector<double>& t, SlowdownMetrics* out) {
  SlowdownMetrics& r = *out;
  r.T_real = t[0];
  r.T_nodelay = t[1];
  r.T_ideal = std::min(t[2], r.T_real);
  const double ideal = r.T_ideal > 0 ? r.T_ideal : 1e-12;
  const size_t num_types = m.type_names.size();
  for (size_t i = 0; i < num_types; ++i) r.op_S.emplace_back(m.type_names[i], t[sc.first_type + i] / ideal);
  r.op_S.emplace_back("launch-delay", t[sc.first_type + num_types] / ideal);
  for (int d = 0; d < m.dp_size; ++d) r.dp_S.push_back(t[sc.first_dp + static_cast<size_t>(d)] / ideal);
  for (int p = 0; p < m.pp_size; ++p) r.stage_S.push_back(t[sc.first_stage + static_cast<size_t>(p)] / ideal);
  r.fix_stage_share.assign(static_cast<size_t>(m.pp_size), 0.0);
  if (m.pp_size > 1) {
    for (size_t p = 0; p < static_cast<size_t>(m.pp_size); ++p) {
      r.fix_stage_share[p] = share(r.T_real, t[sc.first_fix_stage + p], r.T_ideal);
    }
    r.M_S = r.fix_stage_share.back();
  }
  for (int d = 0; d < m.dp_size; ++d) {
    r.dp_fix_gain.push_back(std::max(0.0, t[sc.all_real] - t[sc.first_fix_dp + static_cast<size_t>(d)]) / ideal);
  }
  // The paper's scalable worker score: min of the worker's dp-rank and stage scores.
  r.worker_S.resize(static_cast<size_t>(m.world));
  for (size_t rank = 0; rank < r.worker_S.size(); ++rank) {
    r.worker_S[rank] = std::min(r.dp_S[static_cast<size_t>(m.rank_dp[rank])],
                                r.stage_S[static_cast<size_t>(m.rank_stage[rank])]);
  }
}

// M_W: fix only the top workers (the paper's top 3%, at least one).
void fix_top_workers(const StepModel& m, const NodeValues& values, double top_fraction,
                     StepReplayer* replayer, SlowdownMetrics* out) {
  SlowdownMetrics& r = *out;
  std::vector<int> order(static_cast<size_t>(m.world));
  for (int i = 0; i < m.world; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&r](int a, int b) {
    return r.worker_S[static_cast<size_t>(a)] > r.worker_S[static_cast<size_t>(b)];
  });
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::floor(top_fraction * m.world)));
  r.top_workers.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(k, order.size())));
  std::vector<char> in_w(static_cast<size_t>(m.world), 0);
  for (int w : r.top_workers) in_w[static_cast<size_t>(w)] = 1;
  auto sel_w = [&in_w](const Node& n) { return in_w[static_cast<size_t>(n.rank)] != 0; };
  const LaneOutputs fix_w = replayer->run(
      build_lanes(m, values, {Lane{[sel_w](const Node& n) { return !sel_w(n); },
                                   [sel_w](const Node& n) { return sel_w(n) ? Delay::kIdeal : Delay::kReal; }}}));
  r.M_W = share(r.T_real, fix_w.step_time[0], r.T_ideal);
}

}  // namespace

SlowdownMetrics lane_oracle_metrics(const StepModel& m, const Ideals& ideals, double top_fraction,
                                    bool want_timeline) {
  NodeValues values;
  compute_node_values(m, ideals, &values);
  StepReplayer replayer(m);
  settle_start_offsets(m, &replayer, &values);
  const Scenarios sc = scenarios(m);
  std::vector<double> step_time;
  const LaneOutputs first_batch = replay_all(m, values, sc.lanes, want_timeline, &replayer, &step_time);
  SlowdownMetrics r;
  scores(m, sc, step_time, &r);
  fix_top_workers(m, values, top_fraction, &replayer, &r);
  // Each rank's compute work, real over ideal, rank by rank.
  for (int rank = 0; rank < m.world; ++rank) {
    double real = 0, ideal = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (m.nodes[i].rank != rank || m.nodes[i].role != NodeRole::kCompute) continue;
      real += values.real_work[i];
      ideal += values.ideal_work[i];
    }
    r.own_work_ratio.push_back(ideal > 0 ? real / ideal : 1.0);
  }
  if (want_timeline) {
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      r.real_start.push_back(first_batch.start[2 * i]);
      r.real_end.push_back(first_batch.end[2 * i]);
      r.ideal_start.push_back(first_batch.start[2 * i + 1]);
      r.ideal_end.push_back(first_batch.end[2 * i + 1]);
    }
  }
  return r;
}

}  // namespace sp::online::testing
