// The cause rules, in the order they are tried. Each one is a signature from the paper's
// characterisation (OSDI'25 §5, Fig. 14) or from the probe's own records.
#include "cause_rules.h"

#include <algorithm>
#include <string_view>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

// Whether the step's ops of this type are collectives or p2p transfers (op_role says which
// kinds are); "launch-delay" and any name no op carries are not.
bool is_comm_type(const StepModel& m, std::string_view t) {
  for (const LogicalOp& op : m.ops) {
    if (m.type_names[static_cast<size_t>(op.type)] == t) return op_role(op.kind) == OpRole::kComm;
  }
  return false;
}

}  // namespace

int worst_rank(const SlowdownMetrics& w) {
  int best = 0;
  for (size_t r = 1; r < w.worker_S.size(); ++r) {
    if (w.worker_S[r] > w.worker_S[static_cast<size_t>(best)]) best = static_cast<int>(r);
  }
  return best;
}

CauseResult classify(const CauseInput& in, const CauseThresholds& th) {
  const StepModel& m = *in.model;
  const SlowdownMetrics& w = *in.what_if;
  CauseResult out;
  const double S = w.S();

  // The op type whose real durations alone bring back most of the slowdown.
  double top_S = 0;
  for (const auto& [type, s] : w.op_S) {
    if (s > top_S) {
      top_S = s;
      out.top_op = type;
    }
  }
  const int wr = worst_rank(w);
  const double wr_S = w.worker_S.empty() ? 1.0 : w.worker_S[static_cast<size_t>(wr)];
  auto name_rank = [&](int r, double s) {
    out.worst = "rank:" + std::to_string(r);
    out.worst_S = s;
  };
  auto with_top = [&](const std::string& e) {
    return e + "; top op " + out.top_op + " S_t=" + fixed(top_S, 2);
  };

  // 1. none: within the noise band the job is straggler-free; naming anyone would be noise.
  if (S < th.none_below) {
    out.cause = Cause::kNone;
    out.worst_S = wr_S;
    out.evidence = "S=" + fixed(S, 3) + " below " + fixed(th.none_below, 2);
    return out;
  }

  // 2. gc: the probe records GC pauses (the paper could only see them on timelines). When
  // putting back the real pauses explains more than any other op type, the pause is the cause;
  // the rank that paused longest is named.
  if (out.top_op == "gc") {
    std::vector<double> gc(static_cast<size_t>(m.world), 0.0);
    for (const LogicalOp& op : m.ops) {
      if (op.kind == SP_OP_GC) gc[static_cast<size_t>(op.rank)] += op.own;
    }
    const int r = static_cast<int>(std::max_element(gc.begin(), gc.end()) - gc.begin());
    out.cause = Cause::kGc;
    name_rank(r, w.worker_S[static_cast<size_t>(r)]);
    out.evidence = with_top("rank " + std::to_string(r) + " paused " +
                            fixed(gc[static_cast<size_t>(r)] * 1e3, 1) + " ms in gc");
    return out;
  }

  // 3. host-delay: CPU-side gaps (untraced launch delays) or data-loader waits explain most of
  // the slowdown: the GPU/compute side is not what is slow.
  if (out.top_op == "launch-delay" || out.top_op == "data-wait") {
    out.cause = Cause::kHostDelay;
    name_rank(wr, wr_S);
    out.evidence = with_top("host gaps " + fixed(100.0 * w.launch_share(), 1) +
                            "% of the step");
    return out;
  }

  // 4. comm: a communication type's transfer time (waiting already split off) dominates:
  // link or NIC trouble rather than a slow peer (a slow peer shows as waiting, not transfer).
  if (is_comm_type(m, out.top_op)) {
    out.cause = Cause::kComm;
    name_rank(wr, wr_S);
    out.evidence = with_top("transfer time dominates");
    return out;
  }

  // Compute dominates from here on.
  // 5. seq-imbalance, with lengths: compute time tracks sum(seq_len^2) (or sum(seq_len) for
  // short sequences, where the linear terms dominate) over the recent micro-batches, and the
  // lengths really vary. This comes before the worker rule: a long sequence makes one rank the
  // straggler of its step, which looks like a worker issue within that step.
  const SeqEvidence& q = in.seq;
  const double seq_r = std::max(q.seq_corr, q.seq_corr_linear);
  if (q.seq_samples > 0 && seq_r >= th.seq_corr_min && q.cost_cv >= th.seq_cost_cv_min) {
    out.cause = Cause::kSeqImbalance;
    name_rank(wr, wr_S);
    out.evidence = with_top("r(compute,sum seq_len^2)=" + fixed(q.seq_corr, 2) +
                            " r(compute,sum seq_len)=" + fixed(q.seq_corr_linear, 2) + " over " +
                            std::to_string(q.seq_samples) + " micro-batches");
    return out;
  }

  // 6. stage-imbalance: fixing one stage alone recovers most of the slowdown (M_S for the last
  // stage, the usual culprit with its loss layer) AND all dp ranks of that stage are hot (a hot
  // row). One slow worker also makes its stage's score high, but leaves its row-mates cool.
  if (m.pp_size > 1) {
    const size_t p = static_cast<size_t>(std::max_element(w.stage_S.begin(), w.stage_S.end()) - w.stage_S.begin());
    const double stage_excess = w.stage_S[p] - 1.0;
    bool uniform = stage_excess > 0;
    for (int r = 0; r < m.world && uniform; ++r) {
      if (static_cast<size_t>(m.rank_stage[static_cast<size_t>(r)]) != p) continue;
      uniform = w.worker_S[static_cast<size_t>(r)] - 1.0 >= th.stage_uniform * stage_excess;
    }
    if (w.fix_stage_share[p] >= th.ms_min && uniform) {
      out.cause = Cause::kStageImbalance;
      out.worst = "stage:" + std::to_string(p);
      out.worst_S = w.stage_S[p];
      out.evidence = with_top("fixing stage " + std::to_string(p) + " recovers " +
                              fixed(100.0 * w.fix_stage_share[p], 0) + "% (M_S=" +
                              fixed(w.M_S, 2) + ")");
      return out;
    }
  }

  const bool persistent = in.straggling_steps > 0 &&
                          in.worst_count[static_cast<size_t>(wr)] >=
                              th.persistent_share * in.straggling_steps;
  const std::string persistence = "worst in " + std::to_string(in.worst_count[static_cast<size_t>(wr)]) +
                                  "/" + std::to_string(in.straggling_steps) + " recent straggling steps";

  // 7. seq-imbalance, without lengths: forward and backward durations move together (the
  // paper's r >= 0.9) while the straggling rank changes from step to step (random scatter).
  // A persistently slow worker also inflates both, so persistence rules that case out.
  if (q.fb_samples > 0 && q.fb_corr >= th.fb_corr_min && !persistent && q.seq_samples == 0) {
    out.cause = Cause::kSeqImbalance;
    name_rank(wr, wr_S);
    out.evidence = with_top("r(forward,backward)=" + fixed(q.fb_corr, 2) + ", " + persistence);
    return out;
  }

  // 8. worker: the top workers (the paper's top 3%) explain most of the slowdown (M_W), or,
  // failing every rule above, the worst worker is the best lead there is.
  out.cause = Cause::kWorker;
  name_rank(wr, wr_S);
  out.evidence = with_top("M_W=" + fixed(w.M_W, 2) + (w.M_W >= th.mw_min ? "" : " (weak)") +
                          ", " + persistence);
  return out;
}

}  // namespace sp::online
