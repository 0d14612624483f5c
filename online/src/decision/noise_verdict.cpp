#include "noise_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

// The summaries' clocks resolve a microsecond at best: below that, relative to the step, two
// scores are the same, whatever the null's spread (a job with no jitter has none).
constexpr double kTimeResolutionS = 1e-6;

// A step counts in a window test at most as much as a step that is just significant alone
// (one unit, level alpha).
double window_clip(const NoiseConfig& c) {
  double lo = 0, hi = 40;  // normal_upper(z) = alpha by bisection
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_upper(mid) > c.alpha ? lo : hi) = mid;
  }
  return hi;
}

int history_steps(const NoiseConfig& c) { return std::max(c.alarm_short_steps, c.alarm_long_steps); }

// What the step's recorded pauses (gc, data-wait: ops with a per-slot ideal) cost it, as a
// factor of the ideal: the product over their op types of S_t (only that type's real durations
// put back), each at least 1 (a step where nobody paused has S_t a little below 1: the ideal is
// the pauses' mean per slot). Pauses are measured, not jitter: the null keeps them at their ideal.
double recorded_pause_S(const StepModel& m, const StepVerdict& v) {
  std::vector<char> pause_type(m.type_names.size(), 0);
  for (const LogicalOp& op : m.ops) {
    if (op.rule == IdealRule::kSlotMean) pause_type[static_cast<size_t>(op.type)] = 1;
  }
  double factor = 1.0;
  for (size_t t = 0; t < m.type_names.size(); ++t) {
    if (!pause_type[t]) continue;
    for (const auto& [name, S_t] : v.op_S) {
      if (name == m.type_names[t]) factor *= std::max(1.0, S_t);
    }
  }
  return factor;
}

}  // namespace

NoiseVerdict::NoiseVerdict(const NoiseConfig& config, int window_steps)
    : cfg_(config), noise_(window_steps),
      dp_(window_steps, history_steps(config), window_clip(config), false),
      stages_(window_steps, history_steps(config), window_clip(config), true),
      fix_(window_steps, history_steps(config)),
      step_null_(window_steps, config.calibration_steps), alarms_(config), pool_steps_(std::max(1, window_steps)),
      work_(config.alarm_long_steps) {}

void NoiseVerdict::add_draw(const StepModel& m, const NoiseSpread& spread, int d, SlowdownAnalysis* slowdown) {
  slowdown->null_draw(m, spread, static_cast<uint64_t>(m.step) * 64 + static_cast<uint64_t>(d), &draw_);
  dp_.add_null(draw_.dp_S);
  fix_.add_null(draw_.best_fix_gain);
  if (m.pp_size > 1) stages_.add_null(draw_.stage_S);
  step_null_.add_null(draw_.S);
}

void NoiseVerdict::draw_null(const StepModel& m, SlowdownAnalysis* slowdown) {
  // Without the ranks of the dp rank found leading at the previous step (find_leaders).
  const bool exclude = excluded_ranks_.size() == static_cast<size_t>(m.world);
  const NoiseSpread spread = noise_.spread(m, exclude ? &excluded_ranks_ : nullptr);
  // The first step fills the pools, so that the first tests already have a window's worth of
  // null draws (all but its first drawn after its verdict: draw_owed); then one a step replaces
  // the oldest.
  add_draw(m, spread, 0, slowdown);
  if (steps_ == 0 && pool_steps_ > 1) {
    owed_draws_ = pool_steps_ - 1;
    owed_spread_ = spread;
  }
  ++steps_;
}

void NoiseVerdict::draw_owed(const StepModel& m, SlowdownAnalysis* slowdown) {
  const int owed = owed_draws_;
  owed_draws_ = 0;  // owed once: a draw that throws is not retried
  const NoiseSpread spread = std::move(owed_spread_);
  owed_spread_ = NoiseSpread{};
  for (int d = pool_steps_ - owed; d < pool_steps_; ++d) add_draw(m, spread, d, slowdown);
}

// seq-imbalance is work that differs (longer sequences), which the jitter learned from the
// durations contains: its own evidence decides, the correlation behind the rule against no
// correlation (Fisher's z over its samples).
double correlation_p(const SeqEvidence& q) {
  const bool with_lengths = q.seq_samples > 0;
  const double r = with_lengths ? std::max(q.seq_corr, q.seq_corr_linear) : q.fb_corr;
  const int n = with_lengths ? q.seq_samples : q.fb_samples;
  if (n < 4 || !(r < 1.0)) return n >= 4 ? 0.0 : 1.0;
  return normal_upper(std::atanh(r) * std::sqrt(static_cast<double>(n - 3)));
}

// The rules' cause against the noise: a worker or a stage by its unit's three tests, the
// causes of the whole step by this step's own evidence.
NoiseVerdict::UnitEvidence NoiseVerdict::cause_p(const StepModel& m, const SeqEvidence& seq, double comm_p,
                                                 const StepVerdict& v) const {
  const int rank = v.worst.rank_index();
  const int dp = rank >= 0 && rank < m.world ? m.rank_dp[static_cast<size_t>(rank)] : -1;
  const int stage = v.worst.stage_index();
  if (v.cause == Cause::kWorker) return dp >= 0 ? worker_evidence(static_cast<size_t>(dp)) : UnitEvidence{};
  if (v.cause == Cause::kStageImbalance) {
    return stage >= 0 && static_cast<size_t>(stage) < stages_.units() ? stage_evidence(static_cast<size_t>(stage))
                                                                      : UnitEvidence{};
  }
  return {step_cause_p(seq, comm_p, v, dp), "step"};
}

double NoiseVerdict::step_cause_p(const SeqEvidence& seq, double comm_p, const StepVerdict& v, int dp) const {
  const double p_rank_step = dp >= 0 ? std::min(1.0, 2 * dp_.step_p(static_cast<size_t>(dp))) : 1.0;
  switch (v.cause) {
    case Cause::kNone: return 1.0;
    case Cause::kSeqImbalance: {
      // With lengths the correlation is the evidence. Without, r(forward, backward) also holds
      // when every rank's speed moves together (which the ideal follows: no slowdown), so the
      // step (or its rank) must be significantly slow as well. The price: the null's jitter
      // was learned from durations that include this varying work, so a job with long-tailed
      // lengths and no annotations is named less often than with them.
      const double p = correlation_p(seq);
      return seq.seq_samples > 0 ? p : std::max(p, std::min(1.0, 2 * std::min(v.p_S, p_rank_step)));
    }
    case Cause::kComm: {
      // Also its own evidence: the dominant transfers significantly slower than the level they
      // sustained, when replaying them so costs the step more than jitter does (S_t of the
      // type above the null's mean S). Three tests: Bonferroni x3.
      double S_t = 1.0;
      for (const auto& [name, s] : v.op_S) {
        if (name == v.top_op) S_t = s;
      }
      const double own = S_t > step_null_.mean_S() ? comm_p : 1.0;
      return std::min(1.0, 3 * std::min({v.p_S, p_rank_step, own}));
    }
    default: return std::min(1.0, 2 * std::min(v.p_S, p_rank_step));
  }
}

// The rules' culprit is within the noise. A dp rank may still be named for worker, by its own
// tests, when this step shows it late too (above the null median): the one whose window is the
// most significant, or the one that led the most recent steps. Which of the rules' causes it
// overrides, and why: a worker lead within the noise (the magnitudes too small for the jitter
// learned, while the window or the lead says otherwise); and another cause within the noise
// (the step's dominant op: a slow rank on an oversubscribed CPU also launches late and holds
// its peers in the all-reduce, so on some steps cpu-delay or comm is the larger S_t, and not
// significant), since a rank late over the window is what names a worker on every other step.
// Not a seq-imbalance: when the rules found the slowest rank scattering from step to step with
// its work, they already weighed persistence. A stage-imbalance lead within the noise gives way
// to a dp rank that leads (a slow rank makes its column and its stage late; a heavier stage
// makes no column lead). The cause named for a leading dp rank is worker: its dp-rank score is
// the paper's per-worker what-if (its ops real, every other op ideal), whose lateness is the
// worker signature; a rank whose lateness were its launches alone would need per-rank op-type
// scores to tell, which the step does not compute.
void NoiseVerdict::rules_within_noise(const StepModel& m, double p, StepVerdict* v) {
  size_t best = 0;
  double best_p = 2.0;
  for (size_t d = 0; d < dp_.units(); ++d) {
    const double pd = std::min(dp_.window_p1(d, cfg_.alarm_short_steps), dp_.window_p1(d, cfg_.alarm_long_steps));
    if (pd < best_p) {
      best_p = pd;
      best = d;
    }
  }
  // Each window test proposes its own rank: the means the rank whose window is the most
  // significant, the persistence test the rank that led the most steps (by its lead only).
  int pick = -1;
  UnitEvidence named;
  if (v->cause != Cause::kSeqImbalance) {
    for (const int d : {best_p < 2.0 ? static_cast<int>(best) : -1, dp_lead_.unit}) {
      if (d < 0 || dp_.step_z(static_cast<size_t>(d)) <= 0.0) continue;
      const UnitEvidence e = worker_evidence(static_cast<size_t>(d));
      const bool its_test = d != dp_lead_.unit || d == static_cast<int>(best) || std::string_view(e.by) == "persistence";
      if (its_test && e.p < cfg_.alpha && (pick < 0 || e.p < named.p)) {
        pick = d;
        named = e;
      }
    }
    // The CPU work test's dp rank (persistence.h, WorkHistory): where the ranks' work is on the
    // CPU, one that did more of it than its peers on significantly many recent steps, ahead of
    // every other by a median lead of at least min_slowdown of the step, and whose own
    // durations cost this step at least that much (its dp rank's score). Not "late this step"
    // as the tests above ask: on cores the ranks share, the rank that computes more also slows
    // its neighbours, so on some steps one of them is the later, by the jitter, while the work
    // is still its.
    const int d = work_lead_.unit;
    if (d >= 0 && static_cast<size_t>(d) < v->dp_S.size() &&
        work_lead_.median_lead >= cfg_.min_slowdown && v->dp_S[static_cast<size_t>(d)] - 1.0 >= cfg_.min_slowdown &&
        work_lead_.p < cfg_.alpha && (pick < 0 || work_lead_.p < named.p)) {
      pick = d;
      named = {work_lead_.p, "cpu-work"};
    }
  }
  if (pick >= 0) {
    name_persistent(m, static_cast<size_t>(pick), named, v);
    return;
  }
  const std::string would = std::string(cause_name(v->cause)) + " " + v->worst.text();
  v->cause = Cause::kNone;
  v->worst = {};
  say_evidence(m, "", v);
  v->evidence = "within the noise: S=" + fixed(v->S, 3) + " against the null's " + fixed(v->S_null, 3) +
                " (p_S=" + p_value_text(v->p_S) + "); the likeliest culprit, " + would + ", p=" + p_value_text(p) +
                " >= " + p_value_text(cfg_.alpha);
  if (!v->persist.target.empty()) {
    v->evidence += "; " + v->persist.target.text() + " led " + std::to_string(v->persist.led) + " of the last " +
                   std::to_string(v->persist.of) + " steps (persistence p=" + p_value_text(v->persist.p) + ")";
  }
}

void NoiseVerdict::add_cpu_work(const StepModel& m, double ideal_s) {
  std::vector<double> cpu(static_cast<size_t>(std::max(0, m.dp_size)), 0.0);
  for (int r = 0; r < m.world && static_cast<size_t>(r) < m.rank_cpu_s.size(); ++r) {
    const int d = m.rank_dp[static_cast<size_t>(r)];
    if (d < 0 || static_cast<size_t>(d) >= cpu.size()) continue;
    // A rank whose CPU time is unknown leaves its dp rank unknown (0): the step is not kept.
    const double c = m.rank_cpu_s[static_cast<size_t>(r)];
    double& sum = cpu[static_cast<size_t>(d)];
    sum = c > 0 && sum >= 0 ? sum + c : -1.0;
  }
  work_.add(cpu, ideal_s);
  // Over the alarm's two windows (a rank that starts computing more is found within the
  // shorter, a smaller excess within the longer): the more significant, x2 for the two.
  // Rank 0 runs the analysis, the transport's collector and the job's c10d store beside its
  // training: its training thread's CPU time carries their cost on the cores it shares (the
  // clean 4-rank gloo job here: a median 2.7% of the step above its peers, named on 5 of 75
  // steps). Its dp rank is compared with, never tested; the wall tests still name it.
  const int analysing = m.world > 0 && !m.rank_dp.empty() ? m.rank_dp[0] : -1;
  const WorkHistory::Lead a = work_.lead(cfg_.alarm_short_steps, analysing);
  const WorkHistory::Lead b = work_.lead(cfg_.alarm_long_steps, analysing);
  work_lead_ = a.p < b.p ? a : b;
  work_lead_.p = std::min(1.0, 2 * work_lead_.p);
}

void NoiseVerdict::too_small_to_name(const StepModel& m, StepVerdict* v) const {
  const std::string would = std::string(cause_name(v->cause)) + " " + v->worst.text();
  v->cause = Cause::kNone;
  v->worst = {};
  say_evidence(m, "", v);
  v->evidence = "too small to name: S=" + fixed(v->S, 4) + ", under the " + fixed(100 * cfg_.min_slowdown, 1) +
                "% of the ideal step a step is named for; the likeliest culprit, " + would +
                ", p=" + p_value_text(v->p);
}

void NoiseVerdict::judge(const StepModel& m, const SeqEvidence& seq, double comm_p,
                         const std::vector<double>& dp_fix_gain, SlowdownAnalysis* slowdown, StepVerdict* v) {
  draw_null(m, slowdown);
  const double floor = v->ideal_s > 0 ? kTimeResolutionS / v->ideal_s : 1e-9;
  dp_.set_floor(floor);
  stages_.set_floor(floor);
  step_null_.set_floor(floor);
  fix_.set_floor(floor);
  dp_.add_observed(v->dp_S);
  add_cpu_work(m, v->ideal_s);
  fix_.add_observed(dp_fix_gain);
  if (m.pp_size > 1) stages_.add_observed(v->stage_S);
  v->null_ready = true;
  v->S_null = step_null_.mean_S();
  v->jitter = std::max(0.0, std::min(v->S, v->S_null) - 1.0);
  v->p_S = step_null_.p(v->S);
  find_leaders(m);
  find_column_ranks(m, *v);
  const int worked = work_lead_.unit >= 0 ? column_rank(m, *v, work_lead_.unit) : -1;
  v->cpu_work = {};
  if (worked >= 0) {
    const WorkHistory::Lead& w = work_lead_;
    v->cpu_work = {Culprit::rank(worked), w.above, w.steps, w.most, w.median_excess, w.median_lead, w.p};
  }

  const UnitEvidence e = cause_p(m, seq, comm_p, *v);
  v->p = e.p;
  if (v->cause != Cause::kNone && e.p >= cfg_.alpha) {
    rules_within_noise(m, e.p, v);
  } else if (v->cause == Cause::kNone) {
    v->p = v->p_S;
    say_evidence(m, e.by, v);
  } else {
    // The rules' cause is significant, and it stands for this step whatever another unit's
    // persistence says: a gc pause, a data stall or a slow link this step explains this step,
    // and a rank significantly late this step is this step's straggler, even where another
    // rank led most recent steps (an intermittent rank's slow step behind a persistently
    // slightly late one). The persistence test names a unit only where the rules' culprit is
    // within the noise (rules_within_noise).
    const int rank = v->worst.rank_index();
    if (v->cause == Cause::kWorker && m.pp_size > 1 && rank >= 0 && rank < m.world) {
      const int r = column_rank(m, *v, m.rank_dp[static_cast<size_t>(rank)]);
      if (r >= 0 && r != rank) {
        v->worst = Culprit::rank(r);
        v->worst_S = v->worker_S[static_cast<size_t>(r)];
      }
    }
    say_evidence(m, e.by, v);
    if (v->named_by == "persistence") v->evidence += "; " + v->persist.target.text() + " " + lead_text(v->persist, "dp rank");
    v->evidence += "; p=" + p_value_text(e.p);
  }
  if (v->cause != Cause::kNone && v->S - 1.0 < cfg_.min_slowdown) too_small_to_name(m, v);
  // The S null is calibrated to the steps the verdicts leave unexplained, and to what jitter did
  // to them: a gc pause one step in four, named or not, must not widen the band the next pause
  // is tested against (an unnamed one would widen it, so that fewer are named, which widens it
  // further), so the recorded pauses' own cost is taken out of S first, as the jitter window
  // leaves the pauses out of the jitter (noise_model.cpp).
  if (v->cause == Cause::kNone) step_null_.add_observed(v->S / recorded_pause_S(m, *v));
  AlarmTracker::StepInput in;
  in.step = v->step;
  in.cause = v->cause;
  in.target = v->worst;
  in.dp = &dp_;
  in.stages = m.pp_size > 1 ? &stages_ : nullptr;
  in.column_rank.resize(static_cast<size_t>(m.dp_size));
  for (int d = 0; d < m.dp_size; ++d) in.column_rank[static_cast<size_t>(d)] = column_rank(m, *v, d);
  in.rank_stage = m.rank_stage;
  in.rank_dp = m.rank_dp;
  in.S = v->S;
  in.slow_step = v->p_S < cfg_.alpha;
  in.dp_lead = &dp_lead_;
  in.dp_work = &work_lead_;
  in.costs_more.resize(static_cast<size_t>(m.dp_size));
  for (int d = 0; d < m.dp_size; ++d) in.costs_more[static_cast<size_t>(d)] = costs_more_than_jitter(static_cast<size_t>(d));
  v->alarms = alarms_.update(in);
}

}  // namespace sp::online
