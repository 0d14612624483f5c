// sp_gen_trace: writes a synthetic Megatron-style trace and its meta.yaml.
//
//   sp_gen_trace --dp 64 --pp 8 --tp 8 --mb 32 --steps 20
//                --slow-rank 5:1.3 --slow-stage 7:1.5 --out t.csv.gz --meta meta.yaml
//
// Exit code 2 with one line on stderr for a bad option value.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "straggler_probe/whatif/synthetic_trace.h"

namespace {

using sp::whatif::SlowStage;
using sp::whatif::SlowWorker;
using sp::whatif::SyntheticJobSpec;

// The whole of `text` as a T (int or double), or an error naming the option.
template <class T>
T parse_whole(std::string_view text, const std::string& what) {
  T v = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) {
    throw std::invalid_argument(what + ": '" + std::string(text) + "' is not " +
                                (std::is_integral_v<T> ? "an integer" : "a number"));
  }
  return v;
}

int parse_int(std::string_view text, const std::string& what) { return parse_whole<int>(text, what); }
double parse_factor(std::string_view text, const std::string& what) { return parse_whole<double>(text, what); }

// "WHO:FACTOR" -> (WHO, FACTOR)
std::pair<std::string_view, double> split_factor(std::string_view arg, const std::string& what) {
  const size_t colon = arg.rfind(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument(what + ": expected WHO:FACTOR, got '" + std::string(arg) + "'");
  }
  return {arg.substr(0, colon), parse_factor(arg.substr(colon + 1), what)};
}

// The traced rank with this global rank, or an error naming the traced ranks' spacing.
SlowWorker slow_rank(const SyntheticJobSpec& spec, std::string_view arg) {
  const auto [who, factor] = split_factor(arg, "--slow-rank");
  const int rank = parse_int(who, "--slow-rank");
  const int group = spec.tp_size * spec.dsp_size;
  const int stage_span = spec.dp_size * group;
  if (rank < 0 || rank % group != 0 || rank / stage_span >= spec.pp_size) {
    throw std::invalid_argument("--slow-rank: " + std::to_string(rank) +
                                " is not a traced rank (traced ranks are multiples of tp*dsp=" +
                                std::to_string(group) + " below the world size)");
  }
  return SlowWorker{(rank % stage_span) / group, rank / stage_span, factor};
}

SlowWorker slow_worker(std::string_view arg) {
  const auto [who, factor] = split_factor(arg, "--slow-worker");
  const size_t comma = who.find(',');
  if (comma == std::string_view::npos) {
    throw std::invalid_argument("--slow-worker: expected DP,STAGE:FACTOR, got '" +
                                std::string(arg) + "'");
  }
  return SlowWorker{parse_int(who.substr(0, comma), "--slow-worker"),
                    parse_int(who.substr(comma + 1), "--slow-worker"), factor};
}

SlowStage slow_stage(std::string_view arg) {
  const auto [who, factor] = split_factor(arg, "--slow-stage");
  return SlowStage{parse_int(who, "--slow-stage"), factor};
}

}  // namespace

int main(int argc, char** argv) {
  SyntheticJobSpec spec;
  std::string out_path;
  std::string meta_path;
  std::vector<std::string> slow_ranks;
  std::vector<std::string> slow_workers;
  std::vector<std::string> slow_stages;
  double forward_ms = spec.forward_s * 1e3;
  double gc_ms = spec.gc_pause_s * 1e3;

  CLI::App app{"Generate a synthetic Megatron-style training trace (reference CSV schema)."};
  app.add_option("--dp", spec.dp_size, "data-parallel size");
  app.add_option("--pp", spec.pp_size, "pipeline-parallel size");
  app.add_option("--vpp", spec.vpp_size, "model chunks per stage (>1: interleaved 1F1B)");
  app.add_option("--tp", spec.tp_size, "tensor-parallel size (metadata and rank numbering)");
  app.add_option("--dsp", spec.dsp_size, "context-parallel size (metadata and rank numbering)");
  app.add_option("--mb", spec.micro_batches, "micro-batches per step");
  app.add_option("--steps", spec.steps, "number of steps");
  app.add_option("--first-step", spec.first_step, "number of the first step");
  app.add_option("--seed", spec.seed, "random seed");
  app.add_flag("--overlap-grad-reduce", spec.overlap_grad_reduce,
               "reduce-scatter overlapping the backward pass + separate-grads-all-reduce");
  app.add_option("--forward-ms", forward_ms, "forward compute per stage and micro-batch (ms)");
  app.add_option("--noise", spec.compute_noise, "log-normal sigma of compute durations");
  app.add_option("--comm-noise", spec.comm_noise, "log-normal sigma of transfer times");
  app.add_option("--seqlen-sigma", spec.seqlen_sigma,
                 "long-tailed sequence-length imbalance per (dp rank, micro-batch)");
  app.add_option("--gc-prob", spec.gc_probability, "chance of a gc pause per worker and step");
  app.add_option("--gc-ms", gc_ms, "length of a gc pause (ms)");
  app.add_option("--slow-rank", slow_ranks, "RANK:FACTOR  compute of that global rank x FACTOR");
  app.add_option("--slow-worker", slow_workers, "DP,STAGE:FACTOR  compute of that worker x FACTOR");
  app.add_option("--slow-stage", slow_stages, "STAGE:FACTOR  compute of that stage x FACTOR");
  app.add_option("--trial-name", spec.trial_name, "trial_name in meta.yaml");
  app.add_option("--out", out_path, "trace file (.csv or .csv.gz)")->required();
  app.add_option("--meta", meta_path, "meta.yaml to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
    spec.forward_s = forward_ms * 1e-3;
    spec.gc_pause_s = gc_ms * 1e-3;
    for (const auto& a : slow_ranks) spec.slow_workers.push_back(slow_rank(spec, a));
    for (const auto& a : slow_workers) spec.slow_workers.push_back(slow_worker(a));
    for (const auto& a : slow_stages) spec.slow_stages.push_back(slow_stage(a));
    const auto trace = sp::whatif::generate_synthetic_trace(spec);
    sp::whatif::write_trace_csv(trace.table, out_path);
    sp::whatif::write_meta_yaml(trace.meta, meta_path);
    std::printf("wrote %zu operations (%d traced ranks, %d steps) to %s\n", trace.table.size(),
                spec.dp_size * spec.pp_size, spec.steps, out_path.c_str());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "sp_gen_trace: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sp_gen_trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
