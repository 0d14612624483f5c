// Realistic noise and planted faults on top of the synthetic job (synthetic_job.h), with the
// ground truth of every step: which fault slowed it, whom to name, and by how much it really
// slowed the step (its time against the same seed's time without the faults).
//
// Noise names nobody: every rank draws from the same laws. Per op a log-normal duration factor
// (mean 1), rarely a Pareto-tailed extra delay, log-normal transfer times, and one host (a
// group of consecutive ranks) whose speed drifts slowly. Every draw is a hash of (seed, what,
// step, rank, op), not a position in a random stream, so a run with a fault and the same seed's
// run without it share every noise draw: their ratio is the fault's own slowdown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "synthetic_job.h"

namespace sp::online::testing {

struct NoiseModel {
  double compute_sigma = 0.03;  // log-normal sigma of forward, backward and optimizer times
  double data_sigma = 0.06;     // ... of data-loader waits
  double comm_sigma = 0.06;     // ... of transfer times (bucket all-reduces, p2p)
  double outlier_rate = 1e-4;   // per op: probability of an extra delay
  double outlier_min = 0.02;    // that delay's Pareto minimum, as a share of the op's duration
  double outlier_alpha = 3.0;   // its tail index (P(extra > x) = (min / x)^alpha)
  int ranks_per_host = 8;
  int drift_host = 0;           // the host whose speed drifts (-1: none)
  double drift_max = 0.02;      // its compute time factor wanders in [1, 1 + drift_max]
  double drift_sigma = 0.002;   // per step (a reflected random walk from 1 + drift_max / 2)
  // Work that shows in the wrong op: where a rank is timed on its host and its work runs
  // asynchronously, how much of a micro-batch's forward shows in the forward and how much in
  // the backward that waits for it varies from step to step. Per (step, rank, micro-batch) a
  // share u of the forward's time, uniform in [-fb_shift, fb_shift], moves from the backward to
  // the forward (< 1, so that neither goes negative while the backward is the longer). Each
  // op's time then varies by tens of percent while the rank's total does not: the per-op jitter
  // the noise model learns is much wider than how much ranks differ from each other.
  double fb_shift = 0;

  // The profile the benchmark uses for one jitter level: data waits and transfers twice as
  // noisy as compute, the other fields at their defaults.
  static NoiseModel with_jitter(double sigma);
};

// The planted faults, named by the cause the product should give them.
enum class FaultKind {
  kSlowRank,        // worker: one rank's compute is `slowdown` longer
  kGcPauses,        // gc: a pause of about `pause_s` inside one rank's first forward
  kSeqLens,         // seq-imbalance: long-tailed sequence lengths on every rank (with annotations)
  kHeavyLastStage,  // stage-imbalance: the last stage's compute is `slowdown` longer
  kSlowLink,        // comm: one rank's collectives (no pipeline) or its p2p link to the next
                    // stage (pipeline) transfer `slowdown` longer
  kDataStall,       // cpu-delay: one rank's data-loader wait is about `pause_s` longer
};

struct Fault {
  FaultKind kind = FaultKind::kSlowRank;
  int rank = 0;            // the culprit (not used by kSeqLens and kHeavyLastStage)
  double slowdown = 0.3;   // kSlowRank, kHeavyLastStage, kSlowLink
  double pause_s = 0.05;   // kGcPauses, kDataStall: the median; each draw is log-normal (20%)
  int64_t onset = 0;       // first step with the fault
  int every = 1;           // then on every `every`-th step
  bool applies(int64_t step) const { return step >= onset && (step - onset) % every == 0; }
};

struct NoisyScenario {
  SyntheticJob job;        // shape and base durations; its jitter, gc, seq_lens and
                           // duration_hook are replaced by the noise and the faults
  NoiseModel noise;
  std::vector<Fault> faults;
  int steps = 30;
  // This run is the steps [first_step, first_step + steps) of a longer job: the same draws and
  // faults, numbered as there; only the ranks' clocks restart (every rank starts the first of
  // these steps at the same time, as after a barrier). Long runs are generated in such pieces.
  int64_t first_step = 0;
  uint64_t seed = 1;
  // A fault counts on a step when removing it makes the step at least this much faster;
  // below it the step is `marginal` (the fault is there, its effect is not measurable).
  double min_effect = 0.01;
  // Each rank's summary carries its step's CPU time (StepSummary::step_cpu_ns), as the probe's
  // step-marking thread reads it where a rank's work is on the CPU: the sum of its forward,
  // backward and optimizer times as drawn (its work, with the noise, the drift and a slow
  // rank's fault; not its waits). Off: 0, unknown, as from a device-timed job.
  bool cpu_times = false;
};

// One fault's part in one step.
struct FaultEffect {
  std::string cause;                 // the product's name: worker, gc, seq-imbalance, ...
  std::vector<std::string> targets;  // whom naming is right: "rank:N" / "stage:N"; empty when
                                     // the timings cannot tell (a slow member of a collective)
  double slowdown = 1.0;             // step time / the same step's time without this fault
};

struct StepTruth {
  int64_t step = 0;
  std::vector<FaultEffect> active;   // the faults that count on this step, largest effect first
  bool marginal = false;             // a fault applied but none counts
  double measured_slowdown = 1.0;    // step time / the same seed's step time without the faults
  std::string cause() const { return active.empty() ? "none" : active.front().cause; }
};

struct NoisyRun {
  SyntheticRun run;                      // the job with its noise and faults
  std::vector<double> clean_step_time_s; // the same seed without the faults
  std::vector<StepTruth> truth;
};

// The noise draws, exposed for the tests of their statistics.
class NoiseSource {
 public:
  NoiseSource(const NoiseModel& model, uint64_t seed, int steps);
  // The duration of `site` with noise: `d` times the drift and a log-normal factor, plus an
  // occasional outlier delay proportional to `base` (the job's own duration of the site, so
  // that a faulty run and its clean twin get the same outliers).
  double apply(const DurationSite& site, double d, double base) const;
  double host_factor(int64_t step, int rank) const;  // the drifting host's compute factor
  double outlier(const DurationSite& site, double base) const;  // 0 on most sites
  // The share of a micro-batch's forward time that shows in the forward instead of its
  // backward (NoiseModel::fb_shift; 0 when off), of (step, rank, micro-batch).
  double fb_shift(int64_t step, int rank, int microbatch) const;
  // A standard normal / uniform (0, 1) that is a function of (seed, stream, site). Streams
  // below kFirstFreeStream are the noise's own; the faults draw from the others.
  static constexpr uint64_t kFirstFreeStream = 16;
  double normal(uint64_t stream, const DurationSite& site) const;
  double uniform(uint64_t stream, const DurationSite& site) const;

 private:
  NoiseModel model_;
  uint64_t seed_;
  std::vector<double> drift_;  // per step
};

NoisyRun run_noisy(const NoisyScenario& scenario);

std::string_view fault_cause(FaultKind kind);

}  // namespace sp::online::testing
