// Synthetic Megatron-style training traces, for scale benchmarks and planted-straggler tests.
//
// The generator does not draw timestamps at random: it builds each worker's program for one
// step (1F1B when vpp == 1, interleaved 1F1B when vpp > 1, data-parallel collectives with or
// without overlap, the optimizer's global sync) and replays it on a small event simulator with
// rendezvous semantics: a point-to-point or collective operation ends when all its participants
// have issued it plus a transfer time. The result is a trace the what-if engine accepts and
// replays to within a fraction of a percent of its step times (the differences: the small
// launch gaps it plants on purpose, and 1F1B's blocking batched send+recv calls, whose records
// both end when the slower transfer does).
//
// Everything random comes from one seeded generator of our own, so a seed gives the same trace
// on every platform and standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

// One worker (a traced rank: one dp_rank x stage) whose compute runs `factor` times slower.
struct SlowWorker {
  int dp_rank = 0;
  int stage = 0;
  double factor = 1.0;
};

// A pipeline stage whose compute is `factor` times heavier on every data-parallel rank
// (e.g. the last stage carrying the loss and output layer).
struct SlowStage {
  int stage = 0;
  double factor = 1.0;
};

// The job to synthesise. Durations are seconds; noise values are the sigma of a mean-one
// log-normal factor applied to every sampled duration.
struct SyntheticJobSpec {
  std::string trial_name = "synthetic";
  int dp_size = 2;
  int pp_size = 2;
  int vpp_size = 1;  // > 1: interleaved schedule; needs pp_size > 1 and micro_batches % pp_size == 0
  int tp_size = 1;   // only in the metadata and the rank numbering (one traced rank per TP group)
  int dsp_size = 1;  // context parallel size, likewise
  int micro_batches = 8;
  int steps = 4;
  int64_t first_step = 0;
  // true: gradient reduce-scatter per model chunk overlaps the backward pass, followed by a
  // separate-grads-all-reduce (Megatron's overlap_grad_reduce); false: reduce-scatter after
  // the backward pass.
  bool overlap_grad_reduce = false;
  uint64_t seed = 1;

  // Base durations per stage (split evenly across the vpp model chunks of a stage).
  double forward_s = 0.010;
  double backward_factor = 2.0;  // backward = forward * backward_factor
  double compute_noise = 0.02;
  double comm_noise = 0.05;
  double p2p_s = 0.0005;        // activation/gradient transfer between adjacent stages
  double p2p_noop_s = 0.00001;  // a recorded send/recv that moves nothing (no peer)
  double params_all_gather_s = 0.008;    // per stage, split across model chunks
  double grads_reduce_scatter_s = 0.015; // likewise
  double separate_grads_all_reduce_s = 0.003;
  double layernorm_s = 0.00005;
  double embedding_s = 0.002;
  double clip_s = 0.0005;
  double optimizer_s = 0.010;
  double step_gap_s = 0.002;   // CPU time between one step's optimizer and the next step
  double launch_gap_s = 5e-6;  // mean of the exponential CPU launch gap before each operation
  double gc_probability = 0.0; // chance that a worker's gc op in a step is a real pause...
  double gc_pause_s = 0.05;    // ...of this length

  // Injected stragglers.
  std::vector<SlowWorker> slow_workers;
  std::vector<SlowStage> slow_stages;
  // Sequence-length imbalance: every (step, dp_rank, micro-batch) gets a compute factor
  // exp(sigma * Z - sigma^2 / 2) (long-tailed, mean one) shared by all stages of that dp rank.
  double seqlen_sigma = 0.0;
};

struct SyntheticTrace {
  JobMeta meta;
  TraceTable table;
};

// Throws std::invalid_argument naming the offending field when the spec is not a valid job.
void validate_synthetic_spec(const SyntheticJobSpec& spec);

// Builds the trace. Rows come step by step, rank by rank, each worker's rows by start time.
// start_ts and duration are rounded to float32, as in the reference traces.
SyntheticTrace generate_synthetic_trace(const SyntheticJobSpec& spec);

// Global rank of the traced rank of (dp_rank, stage), Megatron's tp-cp-dp-pp order
// (tp rank 0, cp rank 0 of each group is the one traced).
int32_t synthetic_global_rank(const JobMeta& meta, int dp_rank, int stage);

// Writes the reference CSV schema; gzip-compressed when the path ends in ".gz".
// Throws std::runtime_error naming the path when the file cannot be written.
void write_trace_csv(const TraceTable& table, const std::string& path);

// Writes the reference meta.yaml keys.
void write_meta_yaml(const JobMeta& meta, const std::string& path);

}  // namespace sp::whatif
