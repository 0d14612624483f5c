// generate_synthetic_trace: samples each step's durations (with the planted stragglers),
// replays the step program and appends the rows.
#include "straggler_probe/whatif/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "synthetic_trace_graph.h"
#include "synthetic_trace_random.h"
#include "synthetic_trace_sim.h"

namespace sp::whatif {

namespace {

using synth::StepGraph;
using synth::Transfer;
using synth::Work;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("synthetic trace spec: " + what);
}

void require_duration(double v, const char* name) {
  require(std::isfinite(v) && v >= 0.0, std::string(name) + " must be a finite duration >= 0");
}

// Per-worker and per-stage compute multipliers from the planted stragglers.
struct ComputeFactors {
  std::vector<double> per_worker;  // dp_rank * pp + stage
  std::vector<double> per_stage;
};

ComputeFactors compute_factors(const SyntheticJobSpec& spec) {
  ComputeFactors f;
  f.per_worker.assign(static_cast<size_t>(spec.dp_size * spec.pp_size), 1.0);
  f.per_stage.assign(static_cast<size_t>(spec.pp_size), 1.0);
  for (const SlowWorker& w : spec.slow_workers) {
    f.per_worker[static_cast<size_t>(w.dp_rank * spec.pp_size + w.stage)] *= w.factor;
  }
  for (const SlowStage& s : spec.slow_stages) f.per_stage[static_cast<size_t>(s.stage)] *= s.factor;
  return f;
}

double base_transfer(const SyntheticJobSpec& spec, Transfer kind) {
  const double vpp = spec.vpp_size;
  switch (kind) {
    case Transfer::kP2p: return spec.p2p_s;
    case Transfer::kParamsAllGather: return spec.params_all_gather_s / vpp;
    case Transfer::kGradsReduceScatter: return spec.grads_reduce_scatter_s / vpp;
    case Transfer::kSeparateGradsAllReduce: return spec.separate_grads_all_reduce_s;
    case Transfer::kEmbeddingAllReduce: return spec.embedding_s;
    case Transfer::kClipAllReduce: return spec.clip_s;
  }
  return 0.0;
}

// Draws every duration of one step, in a fixed order (sequence-length factors, then nodes,
// then rendezvous) so that a seed always gives the same trace.
void sample_step(const SyntheticJobSpec& spec, const StepGraph& graph,
                 const ComputeFactors& factors, synth::Random& rng,
                 std::vector<double>& seqlen, synth::StepDurations& d) {
  for (double& f : seqlen) f = rng.lognormal_factor(spec.seqlen_sigma);
  const double forward = spec.forward_s / spec.vpp_size;
  const size_t n = graph.nodes.size();
  d.own.resize(n);
  d.gap.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const synth::Node& node = graph.nodes[i];
    double own = 0.0;
    switch (node.work) {
      case Work::kForward:
      case Work::kBackward: {
        const auto worker = static_cast<size_t>(node.worker);
        const auto dp = worker / static_cast<size_t>(spec.pp_size);
        const auto stage = worker % static_cast<size_t>(spec.pp_size);
        own = forward * (node.work == Work::kBackward ? spec.backward_factor : 1.0) *
              factors.per_stage[stage] * factors.per_worker[worker] *
              seqlen[dp * static_cast<size_t>(spec.micro_batches) +
                     static_cast<size_t>(node.micro_batch)] *
              rng.lognormal_factor(spec.compute_noise);
        break;
      }
      case Work::kP2pBatch: own = spec.p2p_noop_s; break;
      case Work::kGc:
        own = spec.gc_probability > 0.0 && rng.uniform() < spec.gc_probability ? spec.gc_pause_s
                                                                                  : 0.0;
        break;
      case Work::kLayernorm: own = spec.layernorm_s * rng.lognormal_factor(spec.comm_noise); break;
      case Work::kOptimizer: own = spec.optimizer_s * rng.lognormal_factor(spec.compute_noise); break;
      case Work::kNone: break;
    }
    d.own[i] = own;
    d.gap[i] = rng.exponential(spec.launch_gap_s);
  }
  d.transfer.resize(graph.rendezvous_kind.size());
  for (size_t r = 0; r < d.transfer.size(); ++r) {
    d.transfer[r] = base_transfer(spec, graph.rendezvous_kind[r]) *
                    rng.lognormal_factor(spec.comm_noise);
  }
}

// Appends one step's rows: worker by worker, each worker's operations by start time (ties in
// issue order), every record of a node with the node's start and duration.
void append_step(const SyntheticJobSpec& spec, const JobMeta& meta, const StepGraph& graph,
                 int64_t step, const std::vector<double>& start, const std::vector<double>& end,
                 std::vector<uint32_t>& order, TraceTable& table) {
  order.resize(graph.nodes.size());
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const int32_t wa = graph.nodes[a].worker;
    const int32_t wb = graph.nodes[b].worker;
    if (wa != wb) return wa < wb;
    if (start[a] != start[b]) return start[a] < start[b];
    return a < b;
  });
  for (const uint32_t node : order) {
    const int32_t worker = graph.nodes[node].worker;
    const int32_t dp = worker / spec.pp_size;
    const int32_t stage = worker % spec.pp_size;
    const int32_t rank = synthetic_global_rank(meta, dp, stage);
    // The reference traces hold float32 times; round the same way.
    const double ts = static_cast<double>(static_cast<float>(start[node]));
    const double dur = static_cast<double>(static_cast<float>(end[node] - start[node]));
    for (uint32_t r = graph.record_offsets[node]; r < graph.record_offsets[node + 1]; ++r) {
      const synth::Record& rec = graph.records[r];
      table.push_back(dp, stage, rank, step, rec.type, ts, dur, rec.seq_id, rec.mc, rec.mb_id,
                      rec.gmc);
    }
  }
}

}  // namespace

void validate_synthetic_spec(const SyntheticJobSpec& spec) {
  require(!spec.trial_name.empty() && spec.trial_name.find_first_of("\r\n:#") == std::string::npos,
          "trial_name must be non-empty, one line, without ':' or '#'");
  require(spec.dp_size >= 1 && spec.pp_size >= 1 && spec.vpp_size >= 1 && spec.tp_size >= 1 &&
              spec.dsp_size >= 1,
          "dp, pp, vpp, tp and dsp sizes must be >= 1");
  require(static_cast<int64_t>(spec.dp_size) * spec.pp_size * spec.tp_size * spec.dsp_size <=
              (int64_t{1} << 30),
          "world size too large");
  require(spec.micro_batches >= 1, "micro_batches must be >= 1");
  if (spec.vpp_size > 1) {
    require(spec.pp_size > 1, "vpp > 1 (interleaved schedule) needs pp > 1");
    require(spec.micro_batches % spec.pp_size == 0,
            "the interleaved schedule needs micro_batches to be a multiple of pp");
  }
  require(spec.steps >= 1, "steps must be >= 1");
  require(spec.first_step >= 0, "first_step must be >= 0");
  require(std::isfinite(spec.forward_s) && spec.forward_s > 0.0, "forward_s must be > 0");
  require(std::isfinite(spec.backward_factor) && spec.backward_factor > 0.0,
          "backward_factor must be > 0");
  for (const auto& [v, name] :
       {std::pair{spec.compute_noise, "compute_noise"}, {spec.comm_noise, "comm_noise"},
        {spec.p2p_s, "p2p_s"}, {spec.p2p_noop_s, "p2p_noop_s"},
        {spec.params_all_gather_s, "params_all_gather_s"},
        {spec.grads_reduce_scatter_s, "grads_reduce_scatter_s"},
        {spec.separate_grads_all_reduce_s, "separate_grads_all_reduce_s"},
        {spec.layernorm_s, "layernorm_s"}, {spec.embedding_s, "embedding_s"},
        {spec.clip_s, "clip_s"}, {spec.optimizer_s, "optimizer_s"},
        {spec.step_gap_s, "step_gap_s"}, {spec.launch_gap_s, "launch_gap_s"},
        {spec.gc_pause_s, "gc_pause_s"}, {spec.seqlen_sigma, "seqlen_sigma"}}) {
    require_duration(v, name);
  }
  require(spec.gc_probability >= 0.0 && spec.gc_probability <= 1.0,
          "gc_probability must be in [0, 1]");
  for (const SlowWorker& w : spec.slow_workers) {
    require(w.dp_rank >= 0 && w.dp_rank < spec.dp_size && w.stage >= 0 && w.stage < spec.pp_size,
            "slow worker (" + std::to_string(w.dp_rank) + ", " + std::to_string(w.stage) +
                ") is outside the job");
    require(std::isfinite(w.factor) && w.factor > 0.0, "slow worker factor must be > 0");
  }
  for (const SlowStage& s : spec.slow_stages) {
    require(s.stage >= 0 && s.stage < spec.pp_size,
            "slow stage " + std::to_string(s.stage) + " is outside the job");
    require(std::isfinite(s.factor) && s.factor > 0.0, "slow stage factor must be > 0");
  }
}

int32_t synthetic_global_rank(const JobMeta& meta, int dp_rank, int stage) {
  const int32_t group = meta.tp_size * meta.dsp_size;
  return stage * meta.dp_size * group + dp_rank * group;
}

SyntheticTrace generate_synthetic_trace(const SyntheticJobSpec& spec) {
  validate_synthetic_spec(spec);
  SyntheticTrace out;
  JobMeta& meta = out.meta;
  meta.trial_name = spec.trial_name;
  meta.dp_size = spec.dp_size;
  meta.pp_size = spec.pp_size;
  meta.tp_size = spec.tp_size;
  meta.dsp_size = spec.dsp_size;
  meta.vpp_size = spec.vpp_size;
  meta.world_size = spec.dp_size * spec.pp_size * spec.tp_size * spec.dsp_size;

  const StepGraph graph = synth::build_step_graph(spec);
  const ComputeFactors factors = compute_factors(spec);
  synth::Random rng(spec.seed);
  synth::StepDurations durations;
  std::vector<double> seqlen(static_cast<size_t>(spec.dp_size * spec.micro_batches));
  std::vector<double> ready(static_cast<size_t>(graph.num_workers), 0.0);
  std::vector<double> start;
  std::vector<double> end;
  std::vector<uint32_t> order;
  out.table.reserve(graph.records.size() * static_cast<size_t>(spec.steps));

  for (int k = 0; k < spec.steps; ++k) {
    sample_step(spec, graph, factors, rng, seqlen, durations);
    synth::simulate_step(graph, ready, durations, start, end);
    append_step(spec, meta, graph, spec.first_step + k, start, end, order, out.table);
    // Each worker starts its next step after its own last operation plus some CPU time.
    std::fill(ready.begin(), ready.end(), 0.0);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      double& r = ready[static_cast<size_t>(graph.nodes[i].worker)];
      r = std::max(r, end[i]);
    }
    for (double& r : ready) r += spec.step_gap_s * rng.lognormal_factor(spec.comm_noise);
  }
  return out;
}

}  // namespace sp::whatif
