#include "step_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "decision/cause_rules.h"
#include "decision/hang_rule.h"
#include "output/ledger.h"
#include "ideal/robust_stats.h"
#include "straggler_probe/thread_clock.h"
#include "model/step_model_builder.h"
#include "straggler_probe/whatif/number_text.h"
#include "straggler_probe/whatif/op_graph.h"

namespace sp::online {
namespace {

void count_model(const StepModel& m, int64_t step, OnlineStats* stats) {
  stats->ops_clamped += m.clamped;
  stats->ops_ignored += m.ignored;
  stats->ops_superseded += m.superseded;
  stats->ops_kept_without_better_source += m.kept_alone;
  for (const auto& [what, n] : m.superseded_by) stats->ops_superseded_by[what] += n;
  for (const std::string& note : m.notes) stats->last_error = "step " + std::to_string(step) + ": " + note;
}

std::string budget_reason(const OnlineStats& stats, double share) {
  const double per_step = stats.steps_analyzed > 0 ? stats.analysis_cpu_s / static_cast<double>(stats.steps_analyzed) : 0.0;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "the analysis has used its %.0f%% share of one core (%.0f ms of CPU per analysed "
                "step); whole steps are skipped until it is back under",
                100.0 * share, per_step * 1e3);
  return buf;
}

// The comm cause's own evidence: the smallest p of the transfer reference's tests
// (transfer_reference.h) among the keys of the op type the rules found dominant, and that key's
// level over the one it sustained; {1, 0} when the rules did not name comm or no key of that
// type was tested.
struct CommEvidence {
  double p = 1.0, ratio = 0.0;
};
CommEvidence comm_evidence(const StepModel& m, const Ideals& ideals, const StepVerdict& v) {
  CommEvidence out;
  if (v.cause != Cause::kComm || ideals.transfer_windows.empty()) return out;
  std::map<std::string, int> type_of_key;
  for (const LogicalOp& op : m.ops) {
    if (op.rule == IdealRule::kMedian) type_of_key.emplace(m.ideal_keys[static_cast<size_t>(op.key)], op.type);
  }
  for (const auto& [key, w] : ideals.transfer_windows) {
    const auto it = type_of_key.find(key);
    if (it == type_of_key.end() || m.type_names[static_cast<size_t>(it->second)] != v.top_op || w.p >= out.p) continue;
    out.p = w.p;
    out.ratio = w.sustained > 0 && !w.levels.empty() ? w.levels.back() / w.sustained : 0.0;
  }
  return out;
}

}  // namespace

StepAnalysis::StepAnalysis(const OnlineConfig& config)
    : cfg_(config), window_(config.ideal, config.noise.enabled ? config.noise.alpha : 0.0), seq_(config.ideal.window_steps),
      noise_(config.noise, config.ideal.window_steps),
      budget_(config.cpu_budget, config.cpu_budget_burst_s) {
  slowdown_.set_follow_step_level(config.ideal.follow_step_level);
}

StepAnalysis::Outcome StepAnalysis::analyze(int64_t step,
                                            const std::vector<const runtime::StepSummary*>& by_rank,
                                            int64_t now_ns, OnlineStats* stats) {
  Outcome out;
  settle(stats);  // the previous step's owed work, if its host did not settle it after its line
  if (!budget_.allow(now_ns)) {
    out.skip_kind = "cpu budget";
    out.skip_reason = budget_reason(*stats, budget_.share());
    return out;
  }
  const double cpu0 = runtime::thread_cpu_seconds();
  std::string error;
  std::optional<StepModel> model = build_step_model(by_rank, ModelOptions{}, &error);
  if (model) {
    count_model(*model, step, stats);
    window_.push(collect_samples(*model));
    seq_.push(*model);
    if (cfg_.noise.enabled) noise_.push(*model);
    try {
      const Ideals ideals = window_.ideals(*model);
      slowdown_.compute(*model, ideals, cfg_.thresholds.worker_top_fraction, cfg_.timeline_steps > 0, &metrics_);
      out.verdict = verdict(step, *model);
      const HangFinding hang = find_hang(*model, hang_bound(), typical_step_s());
      const int rules_worst = hang.hang ? name_hang(hang, &out.verdict) : judge(*model, ideals, &out.verdict);
      out.verdict.fix_gain_s = named_fix_gain_s(metrics_, out.verdict);  // after the noise model's naming
      if (hang.hang) {
        forget_step();  // a stop is no part of the job's jitter nor of a link's level
      } else {
        remember_worst(rules_worst);
        window_.remember(ideals);
        remember_step_time(model->time_s);
      }
      if (cfg_.timeline_steps > 0) record_timeline(step, *model, out.verdict);
      ++stats->steps_analyzed;
      if (cfg_.noise.enabled && noise_.owes_draws()) owing_model_.emplace(std::move(*model));  // settle()
    } catch (const whatif::GraphError& e) {
      forget_step();
      error = e.what();
      model.reset();
    }
  }
  if (!model) {
    out.skip_kind = "malformed";
    out.skip_reason = error;
  }
  const double cpu = runtime::thread_cpu_seconds() - cpu0;
  budget_.spend(cpu);
  stats->analysis_cpu_s += cpu;
  stats->analysis_cpu_max_s = std::max(stats->analysis_cpu_max_s, cpu);
  return out;
}

// The cause rules, then the noise model's tests of their cause. Returns the rules' rank.
int StepAnalysis::judge(const StepModel& model, const Ideals& ideals, StepVerdict* v) {
  const SeqEvidence seq = seq_.evidence();
  classify_step(model, seq, v);
  const int rules_worst = named_rank(*v);
  if (cfg_.noise.enabled) {
    const CommEvidence comm = comm_evidence(model, ideals, *v);
    noise_.judge(model, seq, comm.p, metrics_.dp_fix_gain, &slowdown_, v);
    if (v->cause == Cause::kComm && comm.ratio > 1) {
      v->evidence += "; " + v->top_op + " transfers " + whatif::fixed(comm.ratio, 1) + "x the level they sustained";
    }
  }
  return rules_worst;
}

// A hang step (hang_rule.h): its verdict. The bound decided it, not the noise model (no p: a
// stop is no draw of the job's jitter, and the null is not drawn from it either). Returns the
// rank it names (-1: none), which no window remembers.
int StepAnalysis::name_hang(const HangFinding& hang, StepVerdict* v) {
  v->cause = Cause::kHang;
  int rank = hang.rank;
  v->top_op = hang.top_op;
  v->evidence = hang.evidence;
  // The heartbeats corroborate where the events cannot tell: one rank went silent in an episode
  // no earlier hang step took. A step over the bound is what opens an episode (the same bound),
  // and it is over by the time the step is analysed, so each hang step takes the latest one.
  const OnlineConfig::SilentRanks silent = cfg_.silent_ranks ? cfg_.silent_ranks() : OnlineConfig::SilentRanks{};
  if (silent.episode > hang_episode_used_) {
    hang_episode_used_ = silent.episode;
    if (rank < 0 && silent.ranks.size() == 1 && silent.ranks[0] >= 0 &&
        static_cast<size_t>(silent.ranks[0]) < v->worker_S.size()) {
      rank = silent.ranks[0];
      v->evidence += "; the hang watch found rank " + std::to_string(rank) + " silent (its heartbeat stopped)";
    }
  }
  v->worst = Culprit::rank(rank);
  v->worst_S = rank >= 0 && static_cast<size_t>(rank) < v->worker_S.size() ? v->worker_S[static_cast<size_t>(rank)] : v->S;
  return rank;
}

// The step's samples out of the ideal, sequence and noise windows it was pushed into.
void StepAnalysis::forget_step() {
  window_.pop_back();
  seq_.pop_back();
  if (cfg_.noise.enabled) noise_.pop_back();
}

// Recent analysed steps' times (hang steps left out), for the hang bound.
void StepAnalysis::remember_step_time(double seconds) {
  step_times_.push_back(seconds);
  while (static_cast<int>(step_times_.size()) > std::max(1, cfg_.ideal.window_steps)) step_times_.pop_front();
}

double StepAnalysis::typical_step_s() const {
  std::vector<double> times(step_times_.begin(), step_times_.end());
  return median_inplace(&times);
}

// The hang watch's bound (rank_pipeline/src/host_transport/hang_watch.cpp, hang_bound_of): max(multiple x the
// typical step, hang_after_s), the typical step the median once 3 steps are known, the largest
// before, 3 x hang_after_s before any (a job of 20 s steps is no hang at 10 s); 0 (off) when
// hang_after_s is.
double StepAnalysis::hang_bound() const {
  if (!(cfg_.hang_after_s > 0)) return 0.0;
  if (step_times_.empty()) return 3 * cfg_.hang_after_s;
  const double typical = step_times_.size() < 3 ? *std::max_element(step_times_.begin(), step_times_.end())
                                                : typical_step_s();
  return std::max(cfg_.hang_after_s, cfg_.hang_multiple * typical);
}

void StepAnalysis::settle(OnlineStats* stats) {
  if (!owing_model_) return;
  const double cpu0 = runtime::thread_cpu_seconds();
  const StepModel model = std::move(*owing_model_);
  owing_model_.reset();
  try {
    noise_.draw_owed(model, &slowdown_);
  } catch (const std::exception& e) {  // the pool then fills one draw a step
    ++stats->analysis_errors;
    stats->last_error = std::string("the noise model's first null pool: ") + e.what();
  }
  const double cpu = runtime::thread_cpu_seconds() - cpu0;
  budget_.spend(cpu);
  stats->analysis_cpu_s += cpu;
}

StepVerdict StepAnalysis::verdict(int64_t step, const StepModel& model) const {
  const SlowdownMetrics& w = metrics_;
  StepVerdict v;
  v.step = step;
  v.analyzed = true;
  v.time_s = model.time_s;
  v.replay_s = w.T_real;
  v.nodelay_s = w.T_nodelay;
  v.ideal_s = w.T_ideal;
  v.S = w.S();
  v.launch_share = w.launch_share();
  v.fidelity_err = model.time_s > 0 ? std::fabs(w.T_real - model.time_s) / model.time_s : 0.0;
  v.dp_size = model.dp_size;
  v.pp_size = model.pp_size;
  v.rank_dp = model.rank_dp;
  v.rank_stage = model.rank_stage;
  v.worker_S = w.worker_S;
  v.dp_S = w.dp_S;
  v.stage_S = w.stage_S;
  v.op_S = w.op_S;
  std::stable_sort(v.op_S.begin(), v.op_S.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  v.M_S = w.M_S;
  v.M_W = w.M_W;
  v.top_workers = w.top_workers;
  return v;
}

// The rank the cause rules named (before the noise model: scatter vs persistence is about where
// the slowest rank is from step to step, whether or not a step is significant; a job whose
// steps are all within the noise would otherwise never have a history to tell them by).
int StepAnalysis::named_rank(const StepVerdict& v) {
  return v.cause != Cause::kNone ? v.worst.rank_index() : -1;
}

void StepAnalysis::remember_worst(int rank) {
  worst_history_.push_back(rank);
  while (static_cast<int>(worst_history_.size()) > std::max(1, cfg_.ideal.window_steps)) worst_history_.pop_front();
}

// The cause, with the persistence of the worst rank over the window (for the worker vs scatter
// distinction): the ranks the recent steps named.
void StepAnalysis::classify_step(const StepModel& model, const SeqEvidence& seq, StepVerdict* v) {
  const SlowdownMetrics& w = metrics_;
  CauseInput in;
  in.model = &model;
  in.what_if = &w;
  in.seq = seq;
  in.worst_count.assign(static_cast<size_t>(model.world), 0);
  for (int r : worst_history_) {
    if (r >= 0 && r < model.world) {
      ++in.worst_count[static_cast<size_t>(r)];
      ++in.straggling_steps;
    }
  }
  v->seq_corr = in.seq.seq_corr;
  v->fb_corr = in.seq.fb_corr;
  const CauseResult c = classify(in, cfg_.thresholds);
  v->cause = c.cause;
  v->worst = c.worst;
  v->worst_S = c.worst_S;
  v->top_op = c.top_op;
  v->evidence = c.evidence;
}

void StepAnalysis::record_timeline(int64_t step, const StepModel& model, const StepVerdict& v) {
  const SlowdownMetrics& w = metrics_;
  TimelineStep ts;
  ts.step = step;
  ts.named_rank = named_rank(v);
  ts.named_stage = v.cause != Cause::kNone ? v.worst.stage_index() : -1;
  ts.rank_score = v.worker_S;
  ts.rank_dp = model.rank_dp;
  ts.rank_stage = model.rank_stage;
  ts.type_names = model.type_names;
  ts.ops.reserve(model.nodes.size());
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    const Node& n = model.nodes[i];
    if (n.role == NodeRole::kMarker || n.role == NodeRole::kStart) continue;
    const LogicalOp& op = model.ops[static_cast<size_t>(n.logical)];
    ts.ops.push_back({n.rank, op.type, n.role == NodeRole::kComm, w.real_start[i], w.real_end[i],
                      w.ideal_start[i], w.ideal_end[i]});
  }
  timeline_.push_back(std::move(ts));
  while (static_cast<int>(timeline_.size()) > cfg_.timeline_steps) timeline_.pop_front();
}

}  // namespace sp::online
