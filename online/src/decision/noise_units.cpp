// The noise verdict's tests of one unit (a dp rank, a stage) and how the verdict names it:
// this step, the recent steps' mean lateness, and who led them (persistence.h); the rank to
// name in a dp column; the evidence the line and the JSONL carry. The rest of the verdict is
// noise_verdict.cpp.
#include <algorithm>
#include <cstdio>
#include <string_view>

#include "noise_verdict.h"
#include "straggler_probe/whatif/number_text.h"

namespace sp::online {

using whatif::fixed;

std::string p_value_text(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

Persistence NoiseVerdict::unit_persistence(const UnitFamily& f, const Persistence& leading, size_t u) const {
  return leading.unit == static_cast<int>(u) ? leading : persistence(f, cfg_.alarm_long_steps, static_cast<int>(u));
}

// A stage: this step or the recent ones (the window test: both windows, every unit),
// Bonferroni x2. No persistence test: stages are not exchangeable (their place in the
// schedule shapes their scores), so which one leads says nothing without a model of where each
// should be, and the null's per-stage means (the window test's offsets, from a window of
// draws) are that model: with 2 stages their error alone made one stage lead 27-30 of 32 steps
// of clean jobs (dp2xpp2, 1-5 of 195 steps named stage-imbalance).
NoiseVerdict::UnitEvidence NoiseVerdict::stage_evidence(size_t s) const {
  const double n = static_cast<double>(stages_.units());
  const double window = sidak(2 * std::min(stages_.window_p1(s, cfg_.alarm_short_steps),
                                           stages_.window_p1(s, cfg_.alarm_long_steps)), n);
  const double step = stages_.step_p(s);
  return {std::min(1.0, 2 * std::min(step, window)), step <= window ? "step" : "window"};
}

// A dp rank as a worker straggler: significantly late, and costing more than jitter does. Why
// the second: over many steps a rank a fraction of a percent behind its peers becomes
// significant, and so does each rank of a host whose GPUs drift 1-2% slow together, yet
// replacing such a rank saves no more than replacing jitter's slowest rank would (fix_gain.h).
// So each of the two magnitude tests is an intersection: this step, the rank late (against the
// most extreme of N null dp ranks) and fixing it saving more than fixing jitter's slowest rank,
// this step and over the recent steps (a drifting host's leading rank sometimes leads its
// siblings by a wide gap on one step, never over a window; a rank slow one step in four gains
// over the window what it costs); over a window, its mean and median late and its gains over
// the window more than the null's best. Each intersection's p is the largest of its parts (a
// valid level-alpha test of "any is jitter"). Why the median too: a rank with a gc pause or a
// slow step one step in four, or the longest sequences on a few steps, has a high window mean,
// yet its typical step is its peers' (the step test names its slow ones).
// A dp rank's tests and their shares of alpha (Bonferroni): this step, alpha/2; the short
// window's mean, alpha/4; the long window's, alpha/8; who led the long window (persistence.h),
// alpha/8. Before the persistence test the two windows had alpha/4 each: the two tests of the
// long window now share its part, so that this step's test (a rank slow on some steps only) and
// the short window's (a strong straggler within a few steps) keep theirs. The persistence test
// needs nothing shorter: in 8 steps it cannot reach alpha (two ranks: 2 x 2^-8 at best). Its
// share is small for what it is for: a rank that leads nearly every step of the window has p
// of 2^-20 or less. The verdict says which test named the rank.
// The persistence test needs no gain: a rank that leads its peers on nearly every step is the
// one rank whose fixing saves the step something on nearly every step, which no fixed rank of
// a job without a special rank does (jitter's slowest rank, whose gain the null measures, is
// another rank each step: no one can replace it), and its rival half already refuses a host of
// ranks late together (they share the leads).
NoiseVerdict::UnitEvidence NoiseVerdict::worker_evidence(size_t d) const {
  const double n = static_cast<double>(dp_.units());
  auto window = [&](int k) {
    return std::max({dp_.window_p1(d, k), dp_.window_median_p1(d, k), fix_.window_p(d, k)});
  };
  const double step = std::max({dp_.step_p(d), fix_.step_p(d), recent_gain_p(d)});
  // Each as a p at the rank's alpha/2 (so that 2 x the smallest is the verdict's p).
  const double short_mean = sidak(2 * window(cfg_.alarm_short_steps), n);
  const double long_mean = sidak(4 * window(cfg_.alarm_long_steps), n);
  const double lead = std::min(1.0, 4 * unit_persistence(dp_, dp_lead_, d).p);
  const double windowed = std::min({short_mean, long_mean, lead});
  return {std::min(1.0, 2 * std::min(step, windowed)),
          step <= windowed ? "step" : lead < std::min(short_mean, long_mean) ? "persistence" : "window"};
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

// A dp rank named although the rules led with a culprit within the noise (rules_within_noise),
// by the test that found it: late over the recent steps (the window), or leading them.
void NoiseVerdict::name_persistent(const StepModel& m, size_t d, const UnitEvidence& e, StepVerdict* v) const {
  const int r = column_rank(m, *v, static_cast<int>(d));
  if (r < 0) return;
  v->cause = Cause::kWorker;
  v->worst = Culprit::rank(r);
  v->worst_S = v->worker_S[static_cast<size_t>(r)];
  v->p = e.p;
  say_evidence(m, e.by, v);
  if (v->named_by == "persistence") {
    v->evidence = "rank " + std::to_string(r) + " " + lead_text(v->persist, "dp rank") + "; its dp rank's score " +
                  fixed(v->dp_S[d], 3) + " this step; p=" + p_value_text(v->p);
    return;
  }
  if (v->named_by == "cpu-work") {
    v->evidence = "rank " + std::to_string(r) + " did more CPU work than its dp rank peers on " +
                  std::to_string(work_lead_.above) + " of the last " + std::to_string(work_lead_.steps) +
                  " steps (median +" + fixed(100 * work_lead_.median_excess, 1) +
                  "% of the ideal step), more than every other on " + std::to_string(work_lead_.most) +
                  " (median +" + fixed(100 * work_lead_.median_lead, 1) + "%); its dp rank's score " +
                  fixed(v->dp_S[d], 3) + " this step; p=" + p_value_text(v->p);
    return;
  }
  v->evidence = "rank " + std::to_string(r) + " late over the recent steps: its dp rank's score " +
                fixed(dp_.window_mean_S(d, cfg_.alarm_short_steps), 3) + " on average over the last " +
                std::to_string(std::min<size_t>(dp_.observed_steps(), static_cast<size_t>(cfg_.alarm_short_steps))) +
                " steps, " + fixed(v->dp_S[d], 3) + " this step; p=" + p_value_text(v->p);
}

// "led its dp rank peers on 30 of the last 32 steps (no other more than 1), ahead of each on at
// least 29 of the 32 steps they differed": the persistence test's counts, in words.
std::string NoiseVerdict::lead_text(const PersistenceEvidence& l, const std::string& peers) {
  return "led its " + peers + " peers on " + std::to_string(l.led) + " of the last " + std::to_string(l.of) +
         " steps (no other more than " + std::to_string(l.rival_led) + "), ahead of each on at least " +
         std::to_string(l.ahead) + " of the " + std::to_string(l.ahead_of) + " steps they differed";
}

// This step's leading dp rank, and the jitter learned without it: a dp rank the persistence
// test finds leading (at alpha) is the culprit, and its own scatter (a rank that burns CPU
// scatters more than its peers) must not widen the null it and the others are tested against.
// Left out of the dp ranks' calibration at once, and of the noise window's jitter from the next
// step's null draw on. A clean job has no dp rank leading but on alpha of its steps, so its
// jitter is learned from every rank as before.
void NoiseVerdict::find_leaders(const StepModel& m) {
  dp_lead_ = persistence(dp_, cfg_.alarm_long_steps);
  const bool dp_leads = dp_lead_.unit >= 0 && dp_lead_.p < cfg_.alpha;
  dp_.exclude_from_calibration(dp_leads ? dp_lead_.unit : -1);
  excluded_ranks_.assign(static_cast<size_t>(m.world), 0);
  for (int r = 0; r < m.world && dp_leads; ++r) {
    excluded_ranks_[static_cast<size_t>(r)] = m.rank_dp[static_cast<size_t>(r)] == dp_lead_.unit;
  }
}

// The test that named v's cause, and the persistence evidence of the dp rank of the rank it
// names, else of the dp rank that led the most recent steps.
void NoiseVerdict::say_evidence(const StepModel& m, const char* by, StepVerdict* v) const {
  v->named_by = v->cause == Cause::kNone ? "" : by;
  const int rank = v->worst.rank_index();
  const int d = rank >= 0 && rank < m.world ? m.rank_dp[static_cast<size_t>(rank)] : -1;
  const Persistence l =
      d >= 0 && static_cast<size_t>(d) < dp_.units() ? unit_persistence(dp_, dp_lead_, static_cast<size_t>(d)) : dp_lead_;
  const int r = l.unit >= 0 ? column_rank(m, *v, l.unit) : -1;
  v->persist = PersistenceEvidence{};
  if (r < 0) return;
  v->persist = {Culprit::rank(r), l.led, l.steps, l.rival_led, l.ahead, l.ahead_of, l.p};
}

}  // namespace sp::online
