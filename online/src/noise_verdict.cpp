#include "noise_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

// The summaries' clocks resolve a microsecond at best: below that, relative to the step, two
// scores are the same, whatever the null's spread (a job with no jitter has none).
constexpr double kTimeResolutionS = 1e-6;

std::string p_text(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

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
      step_null_(window_steps, config.calibration_steps), alarms_(config), pool_steps_(std::max(1, window_steps)) {}

void NoiseVerdict::add_draw(const StepModel& m, const NoiseSpread& spread, int d, SlowdownAnalysis* slowdown) {
  slowdown->null_draw(m, spread, static_cast<uint64_t>(m.step) * 64 + static_cast<uint64_t>(d), &draw_);
  dp_.add_null(draw_.dp_S);
  fix_.add_null(draw_.best_fix_gain);
  if (m.pp_size > 1) stages_.add_null(draw_.stage_S);
  step_null_.add_null(draw_.S);
}

void NoiseVerdict::draw_null(const StepModel& m, SlowdownAnalysis* slowdown) {
  const NoiseSpread spread = noise_.spread(m);
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

// A family's unit: this step or the recent ones (the window test: both windows, every unit),
// Bonferroni x2.
double NoiseVerdict::unit_p(const UnitFamily& f, size_t u) const {
  const double n = static_cast<double>(f.units());
  const double window = sidak(2 * std::min(f.window_p1(u, cfg_.alarm_short_steps),
                                           f.window_p1(u, cfg_.alarm_long_steps)), n);
  return std::min(1.0, 2 * std::min(f.step_p(u), window));
}

// A dp rank as a worker straggler: significantly late, and costing more than jitter does. Why
// the second: over many steps a rank a fraction of a percent behind its peers becomes
// significant, and so does each rank of a host whose GPUs drift 1-2% slow together, yet
// replacing such a rank saves no more than replacing jitter's slowest rank would (fix_gain.h).
// So each of the two tests is an intersection: this step, the rank late (against the most
// extreme of N null dp ranks) and fixing it saving more than fixing jitter's slowest rank,
// this step and over the recent steps (a drifting host's leading rank sometimes leads its
// siblings by a wide gap on one step, never over a window; a rank slow one step in four gains
// over the window what it costs); over a window, its mean and median late and its gains over
// the window more than the null's best. Each intersection's p is the largest of its parts (a
// valid level-alpha test of "any is jitter"). Why the median too: a rank with a gc pause or a slow step one step in four, or
// the longest sequences on a few steps, has a high window mean, yet its typical step is its
// peers' (the step test names its slow ones).
double NoiseVerdict::worker_p(size_t d) const {
  const double n = static_cast<double>(dp_.units());
  auto window = [&](int k) {
    return std::max({dp_.window_p1(d, k), dp_.window_median_p1(d, k), fix_.window_p(d, k)});
  };
  const double step = std::max({dp_.step_p(d), fix_.step_p(d), recent_gain_p(d)});
  return std::min(1.0, 2 * std::min(step, sidak(2 * std::min(window(cfg_.alarm_short_steps), window(cfg_.alarm_long_steps)), n)));
}

bool NoiseVerdict::costs_more_than_jitter(size_t d) const { return recent_gain_p(d) < cfg_.alpha; }

double NoiseVerdict::recent_gain_p(size_t d) const {
  return std::min(fix_.window_p(d, cfg_.alarm_short_steps), fix_.window_p(d, cfg_.alarm_long_steps));
}

// The rank of dp unit d to name: in a pipeline, the one in the stage whose own evidence is the
// strongest (the stage family, over the long window, significant at alpha: the slow rank's
// stage carries its lateness, the column's other stages only wait for it), else the largest
// S_w this step.
// Every dp unit's at once: one pass over the ranks (each column's in rank order), each stage's
// test once (per dp unit, a pass over all ranks was O(dp x ranks) a step).
void NoiseVerdict::find_column_ranks(const StepModel& m, const StepVerdict& v) {
  stage_p_.assign(static_cast<size_t>(std::max(0, m.pp_size)), 1.0);
  if (m.pp_size > 1) {
    // Only evidence counts: a stage whose window is within the noise (a rank slow one step in
    // four barely moves its stage's long-window mean) does not outrank this step's S_w.
    for (size_t s = 0; s < stage_p_.size() && s < stages_.units(); ++s) {
      const double p = stages_.window_p1(s, cfg_.alarm_long_steps);
      stage_p_[s] = p < cfg_.alpha ? p : 1.0;
    }
  }
  int columns = m.dp_size;
  for (int r = 0; r < m.world; ++r) columns = std::max(columns, m.rank_dp[static_cast<size_t>(r)] + 1);
  columns_.assign(static_cast<size_t>(std::max(0, columns)), -1);
  column_p_.assign(columns_.size(), 2.0);
  for (int r = 0; r < m.world; ++r) {
    const int d = m.rank_dp[static_cast<size_t>(r)];
    if (d < 0) continue;
    const auto s = static_cast<size_t>(m.rank_stage[static_cast<size_t>(r)]);
    const double p = s < stage_p_.size() ? stage_p_[s] : 1.0;
    int& best = columns_[static_cast<size_t>(d)];
    double& best_p = column_p_[static_cast<size_t>(d)];
    const bool better = best < 0 || p < best_p ||
                        (p == best_p && v.worker_S[static_cast<size_t>(r)] > v.worker_S[static_cast<size_t>(best)]);
    if (better) {
      best = r;
      best_p = p;
    }
  }
}

int NoiseVerdict::column_rank(const StepModel&, const StepVerdict&, int d) const {
  return d >= 0 && static_cast<size_t>(d) < columns_.size() ? columns_[static_cast<size_t>(d)] : -1;
}

void NoiseVerdict::name_persistent(const StepModel& m, size_t d, StepVerdict* v) const {
  const int r = column_rank(m, *v, static_cast<int>(d));
  if (r < 0) return;
  v->cause = Cause::kWorker;
  v->worst = "rank:" + std::to_string(r);
  v->worst_S = v->worker_S[static_cast<size_t>(r)];
  v->p = worker_p(d);
  v->evidence = "rank " + std::to_string(r) + " late over the recent steps: its dp rank's score " +
                fixed(dp_.window_mean_S(d, cfg_.alarm_short_steps), 3) + " on average over the last " +
                std::to_string(std::min<size_t>(dp_.observed_steps(), static_cast<size_t>(cfg_.alarm_short_steps))) +
                " steps, " + fixed(v->dp_S[d], 3) + " this step; p=" + p_text(v->p);
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

double NoiseVerdict::cause_p(const StepModel& m, const SeqEvidence& seq, double comm_p, const StepVerdict& v) const {
  const int rank = target_index(v.worst, "rank:");
  const int dp = rank >= 0 && rank < m.world ? m.rank_dp[static_cast<size_t>(rank)] : -1;
  const int stage = target_index(v.worst, "stage:");
  const double p_rank_step = dp >= 0 ? std::min(1.0, 2 * dp_.step_p(static_cast<size_t>(dp))) : 1.0;
  switch (v.cause) {
    case Cause::kNone: return 1.0;
    case Cause::kWorker:
      return dp >= 0 ? worker_p(static_cast<size_t>(dp)) : 1.0;
    case Cause::kStageImbalance: return stage >= 0 ? unit_p(stages_, static_cast<size_t>(stage)) : 1.0;
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

void NoiseVerdict::judge(const StepModel& m, const SeqEvidence& seq, double comm_p,
                         const std::vector<double>& dp_fix_gain, SlowdownAnalysis* slowdown, StepVerdict* v) {
  draw_null(m, slowdown);
  const double floor = v->ideal_s > 0 ? kTimeResolutionS / v->ideal_s : 1e-9;
  dp_.set_floor(floor);
  stages_.set_floor(floor);
  step_null_.set_floor(floor);
  fix_.set_floor(floor);
  dp_.add_observed(v->dp_S);
  fix_.add_observed(dp_fix_gain);
  if (m.pp_size > 1) stages_.add_observed(v->stage_S);
  v->null_ready = true;
  v->S_null = step_null_.mean_S();
  v->jitter = std::max(0.0, std::min(v->S, v->S_null) - 1.0);
  v->p_S = step_null_.p(v->S);
  find_column_ranks(m, *v);

  const double p = cause_p(m, seq, comm_p, *v);
  v->p = p;
  if (v->cause != Cause::kNone && p >= cfg_.alpha) {
    // The rules' culprit is within the noise; a dp rank persistently late may still be named
    // when this step shows it late too (above the null median).
    size_t best = 0;
    double best_p = 2.0;
    for (size_t d = 0; d < dp_.units(); ++d) {
      const double pd = std::min(dp_.window_p1(d, cfg_.alarm_short_steps), dp_.window_p1(d, cfg_.alarm_long_steps));
      if (pd < best_p) {
        best_p = pd;
        best = d;
      }
    }
    // Also when the rules led with another cause (the step's dominant op: a slow rank on an
    // oversubscribed CPU also launches late and holds its peers in the all-reduce, so on some
    // steps host-delay or comm is the larger S_t, and not significant): the rank's own test
    // (late, and fixing it saving more than jitter's slowest rank) is what names a worker on
    // every other step. Not over seq-imbalance: when the rules found the slowest rank
    // scattering from step to step with its work, they already weighed persistence.
    if (v->cause != Cause::kSeqImbalance && best_p < 2.0 && worker_p(best) < cfg_.alpha &&
        dp_.step_z(best) > 0.0) {
      name_persistent(m, best, v);
    } else {
      const std::string would = std::string(cause_name(v->cause)) + " " + v->worst;
      v->cause = Cause::kNone;
      v->worst.clear();
      v->evidence = "within the noise: S=" + fixed(v->S, 3) + " against the null's " + fixed(v->S_null, 3) +
                    " (p_S=" + p_text(v->p_S) + "); the likeliest culprit, " + would + ", p=" + p_text(p) +
                    " >= " + p_text(cfg_.alpha);
    }
  } else if (v->cause == Cause::kNone) {
    v->p = v->p_S;
  } else {
    const int rank = target_index(v->worst, "rank:");
    if (v->cause == Cause::kWorker && m.pp_size > 1 && rank >= 0 && rank < m.world) {
      const int r = column_rank(m, *v, m.rank_dp[static_cast<size_t>(rank)]);
      if (r >= 0 && r != rank) {
        v->worst = "rank:" + std::to_string(r);
        v->worst_S = v->worker_S[static_cast<size_t>(r)];
      }
    }
    v->evidence += "; p=" + p_text(p);
  }
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
  in.costs_more.resize(static_cast<size_t>(m.dp_size));
  for (int d = 0; d < m.dp_size; ++d) in.costs_more[static_cast<size_t>(d)] = costs_more_than_jitter(static_cast<size_t>(d));
  v->alarms = alarms_.update(in);
}

}  // namespace sp::online
