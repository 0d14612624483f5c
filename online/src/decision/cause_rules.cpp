// The cause rules, in the order they are tried. Each one is a signature from the paper's
// characterisation (OSDI'25 §5, Fig. 14) or from the probe's own records.
#include "cause_rules.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

// What every rule reads: the step's numbers, its top op type and its worst rank.
struct Step {
  const CauseInput& in;
  const CauseThresholds& th;
  const StepModel& m;
  const SlowdownMetrics& w;
  double S = 1.0;
  std::string top_op;   // the op type whose real durations alone bring back most of the slowdown
  double top_S = 0;
  int worst = 0;        // rank with the largest S_w
  double worst_S = 1.0;

  CauseResult named(Cause cause, int rank, double score, const std::string& evidence) const {
    CauseResult out;
    out.cause = cause;
    out.worst = Culprit::rank(rank);
    out.worst_S = score;
    out.top_op = top_op;
    out.evidence = evidence + "; top op " + top_op + " S_t=" + fixed(top_S, 2);
    return out;
  }
  CauseResult named(Cause cause, const std::string& evidence) const {
    return named(cause, worst, worst_S, evidence);
  }
};

// Whether the step's ops of this type are collectives or p2p transfers (op_role says which
// kinds are); "launch-delay" and any name no op carries are not.
bool is_comm_type(const StepModel& m, std::string_view t) {
  for (const LogicalOp& op : m.ops) {
    if (m.type_names[static_cast<size_t>(op.type)] == t) return op_role(op.kind) == OpRole::kComm;
  }
  return false;
}

// 2. gc: the probe records GC pauses (the paper could only see them on timelines). When putting
// back the real pauses explains more than any other op type, the pause is the cause; the rank
// that paused longest is named.
std::optional<CauseResult> gc_rule(const Step& st) {
  if (st.top_op != "gc") return std::nullopt;
  std::vector<double> gc(static_cast<size_t>(st.m.world), 0.0);
  for (const LogicalOp& op : st.m.ops) {
    if (op.kind == SP_OP_GC) gc[static_cast<size_t>(op.rank)] += op.own;
  }
  const int r = static_cast<int>(std::max_element(gc.begin(), gc.end()) - gc.begin());
  return st.named(Cause::kGc, r, st.w.worker_S[static_cast<size_t>(r)],
                  "rank " + std::to_string(r) + " paused " +
                      fixed(gc[static_cast<size_t>(r)] * 1e3, 1) + " ms in gc");
}

// 3. cpu-delay: CPU-side gaps (untraced launch delays) or data-loader waits explain most of
// the slowdown: the GPU/compute side is not what is slow.
// 4. comm: a communication type's transfer time (waiting already split off) dominates: link or
// NIC trouble rather than a slow peer (a slow peer shows as waiting, not transfer).
std::optional<CauseResult> host_or_comm_rule(const Step& st) {
  if (st.top_op == "launch-delay" || st.top_op == "data-wait") {
    return st.named(Cause::kCpuDelay,
                    "CPU gaps " + fixed(100.0 * st.w.launch_share(), 1) + "% of the step");
  }
  if (is_comm_type(st.m, st.top_op)) return st.named(Cause::kComm, "transfer time dominates");
  return std::nullopt;
}

// 5. seq-imbalance, with lengths: compute time tracks sum(seq_len^2) (or sum(seq_len) for short
// sequences, where the linear terms dominate) over the recent micro-batches, and the lengths
// really vary. This comes before the worker rule: a long sequence makes one rank the straggler
// of its step, which looks like a worker issue within that step.
std::optional<CauseResult> seq_lengths_rule(const Step& st) {
  const SeqEvidence& q = st.in.seq;
  const double r = std::max(q.seq_corr, q.seq_corr_linear);
  if (q.seq_samples == 0 || r < st.th.seq_corr_min || q.cost_cv < st.th.seq_cost_cv_min) {
    return std::nullopt;
  }
  return st.named(Cause::kSeqImbalance,
                  "r(compute,sum seq_len^2)=" + fixed(q.seq_corr, 2) + " r(compute,sum seq_len)=" +
                      fixed(q.seq_corr_linear, 2) + " over " + std::to_string(q.seq_samples) +
                      " micro-batches");
}

// 6. stage-imbalance: fixing one stage alone recovers most of the slowdown (M_S for the last
// stage, the usual culprit with its loss layer) AND all dp ranks of that stage are hot (a hot
// row). One slow worker also makes its stage's score high, but leaves its row-mates cool.
//
// Hot is a rank's own work: its compute, real over ideal (own_work_ratio), each row-mate's
// excess at least stage_uniform of the row's hottest. Not its S_w: in a pp x dp job S_w is
// min(its dp column's score, its stage's score), and the dp column holds other stages' ranks, so
// a noisy peer in another stage makes a cool row-mate of a slow rank look hot (torchtitan's
// 2 stages x 2 dp ranks named the slow rank's stage on 10-20% of its steps that way). A stage
// of one rank is its own row.
//
// Fixing a heavier stage can recover MORE than the slowdown, and its score (only the stage
// real) can exceed S: the ideal re-balances the work, giving every stage the mean, so the
// lighter stages get more than they do. Fixing the heavy stage alone leaves them lighter than
// that ideal (a step shorter than the ideal), and keeping it alone real loads them with the
// mean (a step longer than the real one). Not an error (the paper's artifact reads M_S=1.2 on
// its stage-imbalance trace), but a share over 100% cannot be recovered: the line says "all",
// gives the share, and names the stage with the part of S that fixing it recovers.
std::optional<CauseResult> stage_rule(const Step& st) {
  const StepModel& m = st.m;
  const SlowdownMetrics& w = st.w;
  if (m.pp_size <= 1) return std::nullopt;
  const size_t p = static_cast<size_t>(std::max_element(w.stage_S.begin(), w.stage_S.end()) - w.stage_S.begin());
  double hottest = 0.0, coolest = std::numeric_limits<double>::infinity();
  int row = 0;
  for (int r = 0; r < m.world; ++r) {
    if (static_cast<size_t>(m.rank_stage[static_cast<size_t>(r)]) != p) continue;
    const double excess = w.own_work_ratio[static_cast<size_t>(r)] - 1.0;
    hottest = std::max(hottest, excess);
    coolest = std::min(coolest, excess);
    ++row;
  }
  const bool uniform = w.stage_S[p] > 1.0 && (row <= 1 || (hottest > 0 && coolest >= st.th.stage_uniform * hottest));
  const double share = w.fix_stage_share[p];
  if (share < st.th.ms_min || !uniform) return std::nullopt;
  const double recovered = std::min(1.0, share);
  CauseResult out;
  out.cause = Cause::kStageImbalance;
  out.worst = Culprit::stage(static_cast<int>(p));
  out.worst_S = 1.0 + recovered * (st.S - 1.0);
  out.top_op = st.top_op;
  const std::string how_much =
      share >= 1.0 ? "all of the slowdown (share " + fixed(share, 2) +
                         ": the other stages are lighter than the mean stage)"
                   : fixed(100.0 * share, 0) + "%";
  out.evidence = "fixing stage " + std::to_string(p) + " recovers " + how_much + ", stage score " +
                 fixed(w.stage_S[p], 2) + " (M_S=" + fixed(w.M_S, 2) + "); top op " + st.top_op +
                 " S_t=" + fixed(st.top_S, 2);
  return out;
}

// 7. seq-imbalance, without lengths: forward and backward durations move together (the paper's
// r >= 0.9) while the straggling rank changes from step to step (random scatter). A
// persistently slow worker also inflates both, so persistence rules that case out; with no
// straggling step named yet, scatter cannot be told from persistence, and worker is the lead.
// 8. worker: the top workers (the paper's top 3%) explain most of the slowdown (M_W), or,
// failing every rule above, the worst worker is the best lead there is.
CauseResult scatter_or_worker_rule(const Step& st) {
  const CauseInput& in = st.in;
  const SeqEvidence& q = in.seq;
  const int count = in.worst_count[static_cast<size_t>(st.worst)];
  const bool persistent = in.straggling_steps > 0 && count >= st.th.persistent_share * in.straggling_steps;
  const std::string persistence = "worst in " + std::to_string(count) + "/" +
                                  std::to_string(in.straggling_steps) + " recent straggling steps";
  if (q.fb_samples > 0 && q.fb_corr >= st.th.fb_corr_min && in.straggling_steps > 0 && !persistent &&
      q.seq_samples == 0) {
    return st.named(Cause::kSeqImbalance, "r(forward,backward)=" + fixed(q.fb_corr, 2) + ", " + persistence);
  }
  return st.named(Cause::kWorker, "M_W=" + fixed(st.w.M_W, 2) +
                                      (st.w.M_W >= st.th.mw_min ? "" : " (weak)") + ", " + persistence);
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
  Step st{in, th, *in.model, *in.what_if, 1.0, {}, 0.0, 0, 1.0};
  st.S = st.w.S();
  for (const auto& [type, s] : st.w.op_S) {
    if (s > st.top_S) {
      st.top_S = s;
      st.top_op = type;
    }
  }
  st.worst = worst_rank(st.w);
  st.worst_S = st.w.worker_S.empty() ? 1.0 : st.w.worker_S[static_cast<size_t>(st.worst)];

  // 1. none: within the noise band the job is straggler-free; naming anyone would be noise.
  if (st.S < th.none_below) {
    CauseResult out;
    out.top_op = st.top_op;
    out.worst_S = st.worst_S;
    out.evidence = "S=" + fixed(st.S, 3) + " below " + fixed(th.none_below, 2);
    return out;
  }
  for (auto rule : {gc_rule, host_or_comm_rule, seq_lengths_rule, stage_rule}) {
    if (std::optional<CauseResult> found = rule(st)) return *found;
  }
  return scatter_or_worker_rule(st);  // compute dominates and no pattern above fits
}

}  // namespace sp::online
