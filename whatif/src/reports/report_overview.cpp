// The CLI's printed overview and its verdict rules.
#include "straggler_probe/whatif/report_overview.h"

#include <algorithm>
#include <map>
#include <string>

#include "straggler_probe/whatif/number_text.h"
#include "straggler_probe/whatif/op_type.h"

namespace sp::whatif {
namespace {

const GroupSlowdown* worst(const std::vector<GroupSlowdown>& groups) {
  const auto it = std::max_element(groups.begin(), groups.end(),
                                   [](const GroupSlowdown& a, const GroupSlowdown& b) { return a.slowdown < b.slowdown; });
  return it == groups.end() ? nullptr : &*it;
}

// Fraction of the job's slowdown that one group explains on its own: (S_g - 1) / (S - 1).
double share(double group_slowdown, double s) { return s > 1 ? (group_slowdown - 1) / (s - 1) : 0; }

bool is_compute_name(const std::string& name) {
  const auto t = parse_op_type(name);
  return t && is_compute(*t);
}

// Share of the steps in which the most frequent per-step worst dp rank is the worst (1 when
// one rank is always to blame, about 1/dp when the blame moves at random); 0 if unknown.
double worst_rank_consistency(const std::vector<std::string>& per_step) {
  std::map<std::string, size_t> count;
  size_t best = 0;
  for (const auto& r : per_step) best = std::max(best, ++count[r]);
  return per_step.empty() ? 0 : static_cast<double>(best) / static_cast<double>(per_step.size());
}

}  // namespace

// The rules, in order (first match wins):
// 1. S < 1.10: the job loses under 10% to stragglers, within what the paper treats as normal
//    run-to-run variation; nothing to chase.
// 2. M_W >= 0.5: restoring the top 3% of workers removes at least half the slowdown, so a few
//    machines are to blame (the paper's individual-worker class); name the worst one.
// 3. M_S >= 0.8 and no other stage alone explains more than 20%: the last stage carries the
//    slowdown (stage partitioning imbalance: loss/output layer on the last stage).
// 4. Slowdown mostly in compute, and no dp rank is consistently to blame (none explains half
//    of it, or the worst dp rank changes from step to step: the most frequent one is worst in
//    under half the steps): the signature of uneven sequence lengths across micro-batches (the
//    paper's SE case). When M_S is also notable (>= 0.3) the last stage is mentioned too.
// 5. One dp rank explains half the slowdown and is the worst in most steps: a slow machine
//    (or its network) in that data-parallel replica, spread over its stages.
// 6. Otherwise name the biggest contributor by op type, flagging communication (network).
std::string derive_verdict(const OverviewInput& in) {
  const double s = in.slowdown;
  if (s < kNoStragglingBelow) {
    return "no significant straggling (S=" + fixed(s, 3) + " < " + fixed(kNoStragglingBelow, 2) + ")";
  }
  if (in.m_w && *in.m_w >= kFewWorkersMw) {
    std::string v = "a few workers are the bottleneck (M_W=" + fixed(*in.m_w, 2) + ")";
    if (in.worst_worker_dp && in.worst_worker_stage) {
      v += ": worst is dp rank " + std::to_string(*in.worst_worker_dp) + ", stage " + std::to_string(*in.worst_worker_stage);
    }
    return v;
  }
  const std::string last_stage = std::to_string(in.pp_size - 1);
  double other_stage_share = 0;
  for (const auto& g : in.by_stage) {
    if (g.name != last_stage) other_stage_share = std::max(other_stage_share, share(g.slowdown, s));
  }
  if (in.m_s && *in.m_s >= kLastStageMs && other_stage_share <= 0.2) {
    return "last pipeline stage is the bottleneck (M_S=" + fixed(*in.m_s, 2) + "): rebalance the stage partitioning";
  }
  const GroupSlowdown* top_op = worst(in.by_optype);
  const GroupSlowdown* top_dp = worst(in.by_dp_rank);
  const bool compute_bound = top_op && is_compute_name(top_op->name);
  const bool one_rank_to_blame = top_dp && share(top_dp->slowdown, s) >= 0.5 &&
                                 (in.per_step_worst_dp_rank.empty() || worst_rank_consistency(in.per_step_worst_dp_rank) >= 0.5);
  if (compute_bound && !one_rank_to_blame) {
    std::string v = "stragglers are spread across workers and steps: suspect sequence-length imbalance";
    if (in.m_w) v += " (M_W=" + fixed(*in.m_w, 2) + ")";
    if (in.m_s && *in.m_s >= 0.3) v += "; the last stage adds to it (M_S=" + fixed(*in.m_s, 2) + ")";
    return v;
  }
  if (one_rank_to_blame) {
    return "dp rank " + top_dp->name + " is the bottleneck in most steps (it explains " +
           fixed(100 * share(top_dp->slowdown, s), 0) + "% of the slowdown): suspect its machines or their network";
  }
  if (top_op) {
    const bool comm = !is_compute_name(top_op->name) && top_op->name != "optimizer" && top_op->name != "gc";
    return std::string(comm ? "communication is the main contributor: " : "main contributor: ") + top_op->name +
           " (S_t=" + fixed(top_op->slowdown, 3) + ")" + (comm ? ", suspect the network" : "");
  }
  return "slowdown S=" + fixed(s, 3) + " without attribution (run with a lower --threshold to attribute it)";
}

std::string format_overview(const OverviewInput& in) {
  std::string out;
  out += in.trial_name + ": " + std::to_string(in.steps) + " steps analysed\n";
  out += "  slowdown S        " + fixed(in.slowdown, 4) + "  (waste " + fixed(100 * (1 - 1 / in.slowdown), 1) +
         "% of GPU time; launch delays add " + fixed(in.launch_slowdown, 4) + "x on top)\n";
  auto line = [&](const char* label, const std::vector<GroupSlowdown>& groups, const char* prefix) {
    if (const GroupSlowdown* g = worst(groups)) {
      out += std::string("  ") + label + prefix + g->name + "  (S=" + fixed(g->slowdown, 4) + ")\n";
    }
  };
  line("worst stage       ", in.by_stage, "stage ");
  line("worst dp rank     ", in.by_dp_rank, "dp rank ");
  line("worst op type     ", in.by_optype, "");
  if (in.worst_worker_dp && in.worst_worker_stage && in.worst_worker_slowdown) {
    out += "  worst worker      dp rank " + std::to_string(*in.worst_worker_dp) + ", stage " +
           std::to_string(*in.worst_worker_stage) + "  (S_w=" + fixed(*in.worst_worker_slowdown, 4) + ")\n";
  }
  if (in.by_stage.empty() && in.by_dp_rank.empty() && in.by_optype.empty()) {
    out += "  attribution       not computed (S below the threshold)\n";
  }
  out += "  M_S               " + (in.m_s ? fixed(*in.m_s, 4) : std::string("n/a")) + "  (share explained by the last stage)\n";
  out += "  M_W               " + (in.m_w ? fixed(*in.m_w, 4) : std::string("n/a")) + "  (share explained by the top 3% of workers)\n";
  out += "  verdict           " + derive_verdict(in) + "\n";
  return out;
}

}  // namespace sp::whatif
