#include "noise_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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

int parse_index(const std::string& target, const char* prefix) {
  const std::string pre(prefix);
  if (target.rfind(pre, 0) != 0) return -1;
  return std::atoi(target.c_str() + pre.size());
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

}  // namespace

NoiseVerdict::NoiseVerdict(const NoiseConfig& config, int window_steps)
    : cfg_(config), noise_(window_steps),
      ranks_(window_steps, history_steps(config), window_clip(config), false),
      stages_(window_steps, history_steps(config), window_clip(config), true),
      step_null_(window_steps), alarms_(config), pool_steps_(std::max(1, window_steps)) {}

void NoiseVerdict::draw_null(const StepModel& m, SlowdownAnalysis* slowdown) {
  const NoiseSpread spread = noise_.spread(m);
  // The first step fills the pools, so that the first tests already have a window's worth of
  // null draws; then one a step replaces the oldest.
  const int draws = steps_ == 0 ? pool_steps_ : 1;
  for (int d = 0; d < draws; ++d) {
    slowdown->null_draw(m, spread, static_cast<uint64_t>(m.step) * 64 + static_cast<uint64_t>(d), &draw_);
    null_worker_.resize(static_cast<size_t>(m.world));
    for (size_t r = 0; r < null_worker_.size(); ++r) {
      null_worker_[r] = std::min(draw_.dp_S[static_cast<size_t>(m.rank_dp[r])],
                                 draw_.stage_S[static_cast<size_t>(m.rank_stage[r])]);
    }
    ranks_.add_null(null_worker_, &m.rank_stage);
    if (m.pp_size > 1) stages_.add_null(draw_.stage_S);
    step_null_.add_null(draw_.S);
  }
  ++steps_;
}

// This step or the recent ones (the window test: both windows, every unit), Bonferroni x2.
double NoiseVerdict::rank_p(size_t r) const {
  const double n = static_cast<double>(ranks_.units());
  const double window = sidak(2 * std::min(ranks_.window_p1(r, cfg_.alarm_short_steps),
                                           ranks_.window_p1(r, cfg_.alarm_long_steps)), n);
  return std::min(1.0, 2 * std::min(ranks_.step_p(r), window));
}

double NoiseVerdict::stage_p(size_t p) const {
  const double n = static_cast<double>(stages_.units());
  const double window = sidak(2 * std::min(stages_.window_p1(p, cfg_.alarm_short_steps),
                                           stages_.window_p1(p, cfg_.alarm_long_steps)), n);
  return std::min(1.0, 2 * std::min(stages_.step_p(p), window));
}

void NoiseVerdict::name_rank(size_t r, StepVerdict* v) const {
  v->cause = Cause::kWorker;
  v->worst = "rank:" + std::to_string(r);
  v->worst_S = v->worker_S[r];
  v->p = rank_p(r);
  v->evidence = "rank " + std::to_string(r) + " late over the recent steps: mean S_w " +
                fixed(ranks_.window_mean_S(r, cfg_.alarm_short_steps), 3) + " over the last " +
                std::to_string(std::min<size_t>(ranks_.observed_steps(), static_cast<size_t>(cfg_.alarm_short_steps))) +
                " steps, S_w " + fixed(v->worker_S[r], 3) + " this step";
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

void NoiseVerdict::judge(const StepModel& m, const SeqEvidence& seq, SlowdownAnalysis* slowdown, StepVerdict* v) {
  draw_null(m, slowdown);
  const double floor = v->ideal_s > 0 ? kTimeResolutionS / v->ideal_s : 1e-9;
  ranks_.set_floor(floor);
  stages_.set_floor(floor);
  step_null_.set_floor(floor);
  ranks_.add_observed(v->worker_S, &m.rank_stage);
  if (m.pp_size > 1) stages_.add_observed(v->stage_S);
  v->null_ready = true;
  if (std::getenv("ZZD")) {
    const NoiseSpread sp = noise_.spread(m);
    std::fprintf(stderr, "step %lld pool q50=%.5f q84=%.5f mean=%.5f sd=%.5f | z:", static_cast<long long>(v->step), ranks_.pool().q50, ranks_.pool().q84, ranks_.pool().mean, ranks_.pool().sd);
    for (size_t r = 0; r < ranks_.units(); ++r) std::fprintf(stderr, " %.2f(%.4f)", ranks_.step_z(r), v->worker_S[r]);
    std::fprintf(stderr, " | null dp:");
    for (double d : draw_.dp_S) std::fprintf(stderr, " %.4f", d);
    std::fprintf(stderr, "\n   sig:");
    for (size_t k = 0; k < sp.work_sigma.size(); ++k) std::fprintf(stderr, " %s=%.4f", m.ideal_keys[k].c_str(), sp.work_sigma[k]);
    for (size_t k = 0; k < sp.delay_sigma.size(); ++k) std::fprintf(stderr, " d%s=%.6f", m.delay_keys[k].c_str(), sp.delay_sigma[k]);
    std::fprintf(stderr, "\n");
  }
  v->S_null = step_null_.mean_S();
  v->jitter = std::max(0.0, std::min(v->S, v->S_null) - 1.0);
  v->p_S = step_null_.p(v->S);

  const int rank = parse_index(v->worst, "rank:");
  const int stage = parse_index(v->worst, "stage:");
  const double p_rank_step = rank >= 0 ? std::min(1.0, 2 * ranks_.step_p(static_cast<size_t>(rank))) : 1.0;
  double p = 1.0;
  switch (v->cause) {
    case Cause::kNone: break;
    case Cause::kWorker: p = rank >= 0 ? rank_p(static_cast<size_t>(rank)) : 1.0; break;
    case Cause::kStageImbalance: p = stage >= 0 ? stage_p(static_cast<size_t>(stage)) : 1.0; break;
    case Cause::kSeqImbalance:
      // With lengths the correlation is the evidence. Without, r(forward, backward) also holds
      // when every rank's speed moves together (which the ideal follows: no slowdown), so the
      // step (or its rank) must be significantly slow as well. The price: the null's jitter
      // was learned from durations that include this varying work, so a job with long-tailed
      // lengths and no annotations is named less often than with them.
      p = correlation_p(seq);
      if (seq.seq_samples == 0) p = std::max(p, std::min(1.0, 2 * std::min(v->p_S, p_rank_step)));
      break;
    default: p = std::min(1.0, 2 * std::min(v->p_S, p_rank_step)); break;
  }
  v->p = p;
  if (v->cause != Cause::kNone && p >= cfg_.alpha) {
    // The rules' culprit is within the noise; a rank persistently late may still be named.
    size_t best = 0;
    double best_p = 2.0;
    for (size_t r = 0; r < ranks_.units(); ++r) {
      const double pr = std::min(ranks_.window_p1(r, cfg_.alarm_short_steps), ranks_.window_p1(r, cfg_.alarm_long_steps));
      if (pr < best_p) {
        best_p = pr;
        best = r;
      }
    }
    if (best_p < 2.0 && rank_p(best) < cfg_.alpha && ranks_.step_z(best) > 1.0) {
      name_rank(best, v);
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
    v->evidence += "; p=" + p_text(p);
  }
  AlarmTracker::StepInput in;
  in.step = v->step;
  in.cause = v->cause;
  in.target = v->worst;
  in.ranks = &ranks_;
  in.stages = m.pp_size > 1 ? &stages_ : nullptr;
  in.rank_stage = m.rank_stage;
  in.S = v->S;
  v->alarms = alarms_.update(in);
}

}  // namespace sp::online
