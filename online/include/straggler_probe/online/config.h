// Configuration of the rank-0 online analysis. Plain data; every field has a working default.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "straggler_probe/online/setting_defaults.h"

namespace sp::online {

// Thresholds of the cause classifier (see src/cause_rules.cpp for why each rule exists).
struct CauseThresholds {
  // A user override: S below this is cause none whatever the noise model says. Off by default
  // (1.0): the default decision is the noise model's (NoiseConfig).
  double none_below = setting_defaults::kSlowdownThreshold;
  double ms_min = 0.5;             // stage-imbalance: share of the slowdown one stage explains
  double stage_uniform = 0.5;      // ... and every dp rank of that stage does >= this share of
                                   //     the extra work its hottest rank does (its compute, real
                                   //     over ideal): a hot row, not one hot cell
  double mw_min = 0.5;             // worker: share of the slowdown the top workers explain
  double worker_top_fraction = 0.03;  // the paper's "top 3%" of workers for M_W (at least 1)
  double seq_corr_min = 0.9;       // seq-imbalance: Pearson r of compute vs sum(seq_len^2)
  double seq_cost_cv_min = 0.1;    // ... and the sequence cost must actually vary (coef. of var.)
  double fb_corr_min = 0.9;        // seq-imbalance without annotations: forward/backward r
  double persistent_share = 0.5;   // a worker is persistent if worst in >= this share of window
};

// How the ideal (straggler-free) durations are estimated.
struct IdealConfig {
  int window_steps = setting_defaults::kWindowSteps;  // sliding window of recent analysed steps
  // Persistent-outlier exclusion for compute means (see src/outlier_guard.h): a worker whose
  // window-mean duration of an op class (per unit of work when the micro-batches' sequence
  // lengths are annotated) exceeds its stage's median by more than
  // max(outlier_mad_k * 1.4826 * MAD, outlier_rel_floor * median, outlier_abs_floor_s) is left
  // out of the mean.
  bool exclude_outliers = true;
  double outlier_mad_k = 3.0;
  double outlier_rel_floor = 0.05;
  double outlier_abs_floor_s = 0.0005;  // below this nobody is an outlier (timer noise)
  int outlier_min_workers = 3;     // per stage, for the MAD test; with 2 workers the faster one
                                   // is the reference (same floors); with 1 nobody is excluded
  // Compute and launch-delay ideals follow this step's own level (their mean over the workers
  // the window keeps), so that a slowdown shared by everyone is not straggling
  // (src/ideal_window.cpp).
  bool follow_step_level = true;
};

// The noise model and its tests (src/noise_model.h, src/significance.h, src/alarms.h). The
// levels are false-positive rates, not thresholds on S: what a user is willing to be told
// wrongly. Nothing here is fitted to a job; the jitter itself is learned from the job.
struct NoiseConfig {
  bool enabled = true;             // false: the old rule (S >= none_below names a cause)
  // A step names a rank, stage or cause only when its test against the null has p < alpha:
  // on a healthy job at most ~alpha of the steps name anyone (issue 10 asks <= 1%).
  double alpha = setting_defaults::kSignificance;
  // An alarm is raised when its test has p < alarm_alpha at some step. Its tests at
  // successive steps share their windows, so this per-step level bounds the false alarms per
  // 1000 steps by 1000 x alarm_alpha (0.01: a healthy job raises none in 1000 steps).
  double alarm_alpha = setting_defaults::kAlarmSignificance;
  int alarm_short_steps = 8;       // the alarm's two windows of analysed steps (alarms.h)
  int alarm_long_steps = 32;
  // The null is a model of the jitter (normal per op, learned robustly): a real job's jitter can
  // be wider or heavier-tailed than it (untraced gaps, OS scheduling). Each test's null is widened
  // to the step-to-step dispersion the job itself shows over this many recent analysed steps, at
  // the upper end of its 95% confidence band (significance.h, NullCalibration).
  int calibration_steps = 128;
  // The smallest slowdown a step is named for: a significant cause whose step lost less than
  // this share of its ideal time is reported as none (with its S and what it would have named).
  // Significance says a delay is real, not that it matters: where the null has almost no
  // jitter (one rank, no peers to learn it from; a very steady job) a data wait a few
  // microseconds over its mean is significant. 1% is what the detection bench counts as a
  // measurable fault (bench/detection, `min_effect`); slowdown_threshold raises it per job.
  double min_slowdown = 0.01;
};

struct OnlineConfig {
  int world_size = 1;
  IdealConfig ideal;
  CauseThresholds thresholds;
  NoiseConfig noise;
  // Step completion: a step whose summaries are not all in when a step `incomplete_lag_steps`
  // later is complete, or when more than `max_pending_steps` steps are pending, is skipped.
  int incomplete_lag_steps = 4;
  int max_pending_steps = 16;
  // The analysis's share of one core over time (0: no limit; the live probe sets 0.1). The
  // analysing thread's CPU time is charged against a credit that refills at this share of
  // wall time (capped at cpu_budget_burst_s of wall time's worth); while the credit is
  // spent, complete steps are skipped whole ("cpu budget"), so that rank 0's analysis cannot
  // take more of the training's CPU than that, even at thousands of ranks.
  double cpu_budget = 0;
  double cpu_budget_burst_s = 10;
  // The hang cause (src/hang_rule.h): a step longer than max(hang_multiple x the median recent
  // step, hang_after_s) stopped rather than slowed; its verdict names the rank that stopped, and
  // nothing is learned from it. The live probe passes its hang watch's settings, so that the
  // verdict and the hang line mean the same; hang_after_s 0: off.
  double hang_after_s = setting_defaults::kHangAfterS;
  double hang_multiple = setting_defaults::kHangMultiple;
  // The live hang watch's latest episode (rank_pipeline's HangBoard): its id and the ranks whose
  // heartbeat stopped. A hang the step's events cannot pin on a rank (a stop inside a collective)
  // names the one silent rank of an episode no earlier hang step took. Unset (analyze-dir): no
  // heartbeats, the step names no rank.
  struct SilentRanks {
    uint64_t episode = 0;  // 0: none yet
    std::vector<int> ranks;
  };
  std::function<SilentRanks()> silent_ranks;
  // Output. Empty output_dir: no files. recap_interval 0: no periodic recap.
  std::string output_dir;
  std::string jsonl_name = "straggler_probe_steps.jsonl";
  int recap_interval = setting_defaults::kRecapInterval;
  int timeline_steps = 3;          // last steps kept for the report's real-vs-ideal timeline
  // The ranks timeline.json draws: 0, every rank while the file stays within 16 MiB, beyond that
  // rank 0, the named ranks, each stage's slowest and the slowest / fastest by score up to it
  // (src/timeline_ranks.h); N > 0: at most N ranks, chosen the same way (the job's size: all).
  int timeline_ranks = setting_defaults::kTimelineRanks;
  // Where log lines and summaries go. Unset: nothing is printed (the caller prints verdicts).
  std::function<void(const std::string&)> log_sink;
};

}  // namespace sp::online
