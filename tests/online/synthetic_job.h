// A synthetic training job for the online-analysis tests: per-rank programs (data wait,
// forward/backward per micro-batch, DDP bucket all-reduces launched inside the last backward,
// send/recv between stages in a GPipe or 1F1B order, optimizer) executed with blocking
// semantics, producing the StepSummary every rank would send and the job's true step times.
#pragma once

#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::online::testing {

// Where the job uses a duration (SyntheticJob::duration_hook).
struct DurationSite {
  uint32_t kind = 0;  // SP_OP_DATA_WAIT, _FORWARD, _BACKWARD, _OPTIMIZER: that op's duration;
                      // SP_OP_COLLECTIVE: a bucket all-reduce's transfer; SP_OP_SEND: a p2p transfer
  int64_t step = 0;
  int rank = -1;      // the op's rank; a collective: its group's first rank; p2p: the sender
  int peer = -1;      // p2p: the receiver
  int index = -1;     // the micro-batch; a collective: its bucket; p2p: the channel's message number
};
// The pipeline schedule: GPipe (all forwards, then all backwards, each transfer alone) or 1F1B
// (torch.distributed.pipelining's order, with a send and a receive batched together).
enum class Schedule { kGPipe, k1F1B };

struct SyntheticJob {
  int dp = 4;
  int pp = 1;
  int microbatches = 1;
  Schedule schedule = Schedule::kGPipe;
  double data_wait_s = 0.002;
  double forward_s = 0.020;
  double backward_s = 0.040;
  double optimizer_s = 0.005;
  double gap_s = 0.0003;        // CPU time between consecutive ops (launch delay)
  double finalize_s = 0.0002;   // backward's work after its bucket all-reduces finished
  int buckets = 2;
  double allreduce_s = 0.004;   // transfer time of one bucket
  double p2p_s = 0.001;
  std::vector<double> rank_speed;   // compute time multiplier per global rank (default 1)
  std::vector<double> stage_speed;  // compute time multiplier per stage (default 1)
  std::vector<std::pair<int64_t, double>> step_speed;  // (step, multiplier for every rank)
  // GC pauses (step, rank, seconds): inside the rank's first forward of that step.
  std::vector<std::tuple<int64_t, int, double>> gc;
  // Long-tailed random sequence lengths per (step, rank, micro-batch); compute scales with
  // sum(len^2) (plus a small linear term), and ("seq_lens", "...") annotations are attached.
  bool seq_lens = false;
  bool annotate = true;
  int seqs_per_microbatch = 4;
  double jitter = 0.0;          // relative Gaussian noise on compute durations
  uint32_t seed = 1;
  // Noise and faults from outside (tests/online/noisy_job.h): when set, every duration above
  // goes through it, (where, the duration this job would use) -> the duration to use. It may be
  // called more than once for one site, so it must be a function of the site.
  std::function<double(const DurationSite&, double)> duration_hook;
};

struct SyntheticRun {
  std::vector<std::vector<runtime::StepSummary>> steps;  // [step][rank]
  std::vector<double> step_time_s;  // the longest rank's step: its step mark - its step start
};

// Global rank of (dp rank, stage): stage-major, rank = stage * dp + dp_rank.
SyntheticRun run_synthetic(const SyntheticJob& job, int num_steps);

double mean(const std::vector<double>& v, size_t from = 0);

}  // namespace sp::online::testing
