#include "what_if.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "replay.h"

namespace sp::online {
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

struct NodeValues {
  std::vector<double> real_work, real_delay, ideal_work, ideal_delay;
};

// Ideal duration and launch delay of every node. A host op split into segments has its ideal
// spread over the segments in proportion to their recorded lengths.
NodeValues node_values(const StepModel& m, const Ideals& ideals) {
  NodeValues v;
  const size_t n = m.nodes.size();
  v.real_work.assign(n, 0.0);
  v.real_delay.assign(n, 0.0);
  v.ideal_work.assign(n, 0.0);
  v.ideal_delay.assign(n, 0.0);
  std::vector<int> pieces(m.ops.size(), 0);
  for (const Node& node : m.nodes) {
    if (node.logical >= 0) ++pieces[static_cast<size_t>(node.logical)];
  }
  // Per (rank, key): total own time of pause-like ops (slot-mean rule).
  std::map<std::pair<int, int>, double> slot_total;
  for (const LogicalOp& op : m.ops) {
    if (op.rule == IdealRule::kSlotMean) slot_total[{op.rank, op.key}] += op.own;
  }
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
    const LogicalOp& op = m.ops[static_cast<size_t>(node.logical)];
    const double target = ideals.duration[static_cast<size_t>(op.key)];
    if (op.first_node == static_cast<int>(i)) {
      v.ideal_delay[i] = ideals.delay[static_cast<size_t>(op.delay_key)];
    }
    if (node.role == NodeRole::kComm) {
      v.ideal_work[i] = target;
      continue;
    }
    const double own = op.rule == IdealRule::kSlotMean ? slot_total[{op.rank, op.key}] : op.own;
    if (own > 0) {
      v.ideal_work[i] = node.duration * target / own;
    } else {
      v.ideal_work[i] = op.rule == IdealRule::kSlotMean ? node.duration
                                                        : target / pieces[static_cast<size_t>(node.logical)];
    }
  }
  return v;
}

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

}  // namespace

WhatIfResult run_what_if(const StepModel& m, const Ideals& ideals, double top_fraction,
                         bool want_timeline) {
  NodeValues values = node_values(m, ideals);
  StepReplayer replayer(m);
  settle_start_offsets(m, &replayer, &values);
  auto type_of = [&m](const Node& n) { return n.logical >= 0 ? m.ops[static_cast<size_t>(n.logical)].type : -1; };
  auto always = [](const Node&) { return true; };
  auto never = [](const Node&) { return false; };
  auto real_delay = [](const Node&) { return Delay::kReal; };
  auto ideal_delay = [](const Node&) { return Delay::kIdeal; };

  std::vector<Lane> lanes;
  lanes.push_back({always, real_delay, true});                                  // 0: real
  lanes.push_back({always, [](const Node&) { return Delay::kZero; }, true});   // 1: no launch delay
  lanes.push_back({never, ideal_delay});                                  // 2: ideal
  const size_t first_type = lanes.size();
  const int num_types = static_cast<int>(m.type_names.size());
  for (int t = 0; t < num_types; ++t) {
    lanes.push_back({[t, type_of](const Node& n) { return type_of(n) == t; }, ideal_delay});
  }
  lanes.push_back({never, real_delay});  // launch delays put back
  const size_t first_dp = lanes.size();
  auto in_dp = [&m](int d) { return [&m, d](const Node& n) { return m.rank_dp[static_cast<size_t>(n.rank)] == d; }; };
  auto in_stage = [&m](int p) { return [&m, p](const Node& n) { return m.rank_stage[static_cast<size_t>(n.rank)] == p; }; };
  for (int d = 0; d < m.dp_size; ++d) {
    auto sel = in_dp(d);
    lanes.push_back({sel, [sel](const Node& n) { return sel(n) ? Delay::kReal : Delay::kIdeal; }});
  }
  const size_t first_stage = lanes.size();
  for (int p = 0; p < m.pp_size; ++p) {
    auto sel = in_stage(p);
    lanes.push_back({sel, [sel](const Node& n) { return sel(n) ? Delay::kReal : Delay::kIdeal; }});
  }
  const size_t first_fix_stage = lanes.size();
  if (m.pp_size > 1) {
    for (int p = 0; p < m.pp_size; ++p) {
      auto sel = in_stage(p);
      lanes.push_back({[sel](const Node& n) { return !sel(n); },
                       [sel](const Node& n) { return sel(n) ? Delay::kIdeal : Delay::kReal; }});
    }
  }

  // Replayed in batches of lanes, so that memory stays proportional to the graph, not to
  // graph x (dp + pp) scenarios, in a large job. The first batch holds lanes 0 (real) and 2
  // (ideal), whose per-node times the timeline needs.
  LaneOutputs out;
  LaneOutputs first_batch;
  const std::vector<size_t> timeline_lanes = want_timeline ? std::vector<size_t>{0, 2} : std::vector<size_t>{};
  for (size_t begin = 0; begin < lanes.size(); begin += kLanesPerRun) {
    const size_t end = std::min(lanes.size(), begin + kLanesPerRun);
    const std::vector<Lane> batch(lanes.begin() + static_cast<std::ptrdiff_t>(begin),
                                  lanes.begin() + static_cast<std::ptrdiff_t>(end));
    LaneOutputs o = replayer.run(build_lanes(m, values, batch),
                                 begin == 0 ? timeline_lanes : std::vector<size_t>{});
    out.step_time.insert(out.step_time.end(), o.step_time.begin(), o.step_time.end());
    if (begin == 0) first_batch = std::move(o);
  }
  WhatIfResult r;
  r.T_real = out.step_time[0];
  r.T_nodelay = out.step_time[1];
  // The straggler-free step is never slower than the real one. The ideal replay can come out
  // longer: re-balancing moves work onto a stage on the critical path (a clean GPipe pipeline
  // whose last stage also runs the loss: the first stage's backwards, which end the step, get
  // its share), or this step's transfers and delays were below the window's usual. Such a step
  // has nothing to recover: S = 1, and its scores are taken against the real step.
  r.T_ideal = std::min(out.step_time[2], r.T_real);
  const double ideal = r.T_ideal > 0 ? r.T_ideal : 1e-12;
  for (int t = 0; t < num_types; ++t) {
    r.op_S.emplace_back(m.type_names[static_cast<size_t>(t)], out.step_time[first_type + static_cast<size_t>(t)] / ideal);
  }
  r.op_S.emplace_back("launch-delay", out.step_time[first_type + static_cast<size_t>(num_types)] / ideal);
  for (int d = 0; d < m.dp_size; ++d) r.dp_S.push_back(out.step_time[first_dp + static_cast<size_t>(d)] / ideal);
  for (int p = 0; p < m.pp_size; ++p) r.stage_S.push_back(out.step_time[first_stage + static_cast<size_t>(p)] / ideal);
  r.fix_stage_share.assign(static_cast<size_t>(m.pp_size), 0.0);
  if (m.pp_size > 1) {
    for (int p = 0; p < m.pp_size; ++p) {
      r.fix_stage_share[static_cast<size_t>(p)] =
          share(r.T_real, out.step_time[first_fix_stage + static_cast<size_t>(p)], r.T_ideal);
    }
    r.M_S = r.fix_stage_share.back();
  }
  // The paper's scalable worker score: min of the worker's dp-rank and stage scores.
  r.worker_S.resize(static_cast<size_t>(m.world));
  for (int rank = 0; rank < m.world; ++rank) {
    r.worker_S[static_cast<size_t>(rank)] =
        std::min(r.dp_S[static_cast<size_t>(m.rank_dp[static_cast<size_t>(rank)])],
                 r.stage_S[static_cast<size_t>(m.rank_stage[static_cast<size_t>(rank)])]);
  }

  // M_W: fix only the top workers (the paper's top 3%, at least one).
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
  const LaneOutputs fix_w = replayer.run(
      build_lanes(m, values, {Lane{[sel_w](const Node& n) { return !sel_w(n); },
                                   [sel_w](const Node& n) { return sel_w(n) ? Delay::kIdeal : Delay::kReal; }}}));
  r.M_W = share(r.T_real, fix_w.step_time[0], r.T_ideal);

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

}  // namespace sp::online
