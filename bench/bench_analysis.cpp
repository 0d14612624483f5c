// sp_bench_analysis: time and memory of the full what-if analysis (result.json + M_S + M_W).
//
// 1. The reference traces (tests/data/{ST,SE}), against the paper artifact's Python on this
//    kind of machine: speedup = Python seconds / ours, single-threaded, best of N runs.
// 2. Synthetic jobs up to 4096 GPUs (tp=8, pp=8, dp=64: 512 traced ranks, 32 micro-batches,
//    20 steps), showing time per operation stays flat as the trace grows.
//
// Peak memory is the heap high-water mark of the analysis (counting allocator) plus the trace
// table it reads; the process's max RSS is printed at the end.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "heap_counter.h"
#include "straggler_probe/thread_clock.h"
#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/synthetic_trace.h"
#include "straggler_probe/whatif/trace_loader.h"

namespace {

using sp::whatif::Analysis;
using sp::whatif::JobMeta;
using sp::whatif::TraceTable;

constexpr double kMiB = 1024.0 * 1024.0;

// Wall and CPU time of this thread. The machine is shared, so CPU time is the measure that
// does not depend on what else runs; the best-of-N wall time is printed beside it.
struct Clock {
  std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
  double cpu0 = sp::runtime::thread_cpu_seconds();

  double wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }
  double cpu() const { return sp::runtime::thread_cpu_seconds() - cpu0; }
};

size_t table_bytes(const TraceTable& t) {
  return t.dp_rank.capacity() * 4 + t.stage.capacity() * 4 + t.rank.capacity() * 4 +
         t.step.capacity() * 8 + t.optype.capacity() + t.start_ts.capacity() * 8 +
         t.duration.capacity() * 8 + t.seq_id.capacity() * 4 + t.mc.capacity() * 4 +
         t.mb_id.capacity() * 4 + t.gmc.capacity() * 4;
}

struct Phase {
  double cpu = 0;
  double wall = 0;
  void keep_best(double c, double w, bool first) {
    cpu = first ? c : std::min(cpu, c);
    wall = first ? w : std::min(wall, w);
  }
};

struct Measured {
  Phase analyze;  // model + all simulations of result.json
  Phase ms;
  Phase mw;
  size_t peak_heap = 0;  // analysis high-water mark above the loaded trace
  size_t replays = 0;  // timeline simulations the analysis ran (see count_replays)
  double slowdown = 0;
  double ms_value = 0;
  std::optional<double> mw_value;
  double total_cpu() const { return analyze.cpu + ms.cpu + mw.cpu; }
  double total_wall() const { return analyze.wall + ms.wall + mw.wall; }
};

// How many timeline simulations the full analysis runs: the no-delay and ideal replays, one
// per attributed group (every dp rank, stage and op type, when the slowdown passes the
// threshold; likewise for the launch attribution), and two each for M_S and M_W. Their count
// grows with dp, so the cost per op and replay is what shows whether the engine is linear.
size_t count_replays(const sp::whatif::AnalysisResult& r, bool has_mw) {
  size_t n = 2 + 2 + (has_mw ? 2 : 0);
  for (const auto* d : {&r.blocking_by_dp_rank, &r.blocking_by_stage, &r.blocking_by_optype,
                        &r.launch_by_dp_rank, &r.launch_by_stage, &r.launch_by_optype}) {
    if (d->has_value()) n += (*d)->overall.size();
  }
  return n;
}

// Best time of `repeats` runs for each phase; memory and values from the first run.
Measured measure(const TraceTable& trace, const JobMeta& meta, int repeats) {
  Measured m;
  for (int run = 0; run < repeats; ++run) {
    const bool first = run == 0;
    sp::bench::heap_reset_peak();
    const size_t live_before = sp::bench::heap_live_bytes();
    Clock clock;
    Analysis analysis(trace, meta);
    m.analyze.keep_best(clock.cpu(), clock.wall(), first);
    clock = Clock();
    const auto ms = analysis.compute_ms();
    m.ms.keep_best(clock.cpu(), clock.wall(), first);
    clock = Clock();
    const auto mw = analysis.compute_mw();
    m.mw.keep_best(clock.cpu(), clock.wall(), first);
    if (first) {
      m.peak_heap = sp::bench::heap_peak_bytes() - live_before;
      m.slowdown = analysis.result().blocking_slowdown;
      m.replays = count_replays(analysis.result(), mw.has_value());
      m.ms_value = ms.rem;
      if (mw) m.mw_value = mw->rem;
    }
  }
  return m;
}

std::string fmt_ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  return buf;
}

std::string fmt_mw(const std::optional<double>& v) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", *v);
  return buf;
}

// The artifact's Python on a 2-core machine of this kind (issue 2): analysis, M_S, M_W.
struct PythonTimes {
  const char* name;
  double analysis_s;
  double ms_s;
  double mw_s;
};
constexpr PythonTimes kPython[] = {{"ST", 1.7, 0.6, 0.6}, {"SE", 2.2, 0.6, 0.6}};

void bench_reference(const std::string& data_dir, int repeats) {
  std::printf("Reference traces: full analysis, single-threaded, best of %d runs; times are "
              "CPU time of the thread (wall: best wall time)\n",
              repeats);
  std::printf("%-4s %7s %10s %9s %9s %10s %10s %8s %8s %9s %7s %6s %6s\n", "case", "ops",
              "analyze", "M_S", "M_W", "total", "wall", "python", "speedup", "peak MiB", "S",
              "M_S", "M_W");
  for (const PythonTimes& py : kPython) {
    const std::string dir = data_dir + "/" + py.name;
    JobMeta meta;
    TraceTable trace;
    try {
      meta = sp::whatif::load_meta(dir + "/meta.yaml");
      trace = sp::whatif::load_trace_csv(dir + "/trace.csv.gz", meta);
    } catch (const std::exception& e) {
      std::printf("%-4s skipped: %s\n", py.name, e.what());
      continue;
    }
    const Measured m = measure(trace, meta, repeats);
    const double python_s = py.analysis_s + py.ms_s + py.mw_s;
    std::printf("%-4s %7zu %10s %9s %9s %10s %10s %6.1f s %7.0fx %9.1f %7.4f %6.3f %6s\n",
                py.name, trace.size(), fmt_ms(m.analyze.cpu).c_str(), fmt_ms(m.ms.cpu).c_str(),
                fmt_ms(m.mw.cpu).c_str(), fmt_ms(m.total_cpu()).c_str(),
                fmt_ms(m.total_wall()).c_str(), python_s, python_s / m.total_cpu(),
                static_cast<double>(table_bytes(trace) + m.peak_heap) / kMiB, m.slowdown,
                m.ms_value, fmt_mw(m.mw_value).c_str());
  }
  std::printf("python: the artifact's analysis + M_S + M_W on this kind of 2-core machine "
              "(ST 1.7+0.6+0.6 s, SE 2.2+0.6+0.6 s)\n");
}

// A 4096-GPU-class job at a given dp size: tp=8, pp=8, 32 micro-batches, 20 steps, with one
// slow rank (so that the attribution runs and M_W has something to find) and some
// sequence-length imbalance.
sp::whatif::SyntheticJobSpec scale_spec(int dp) {
  sp::whatif::SyntheticJobSpec spec;
  spec.trial_name = "scale-dp" + std::to_string(dp);
  spec.dp_size = dp;
  spec.pp_size = 8;
  spec.tp_size = 8;
  spec.micro_batches = 32;
  spec.steps = 20;
  spec.seed = 7;
  spec.seqlen_sigma = 0.02;
  spec.slow_workers.push_back({dp / 2, 3, 1.3});
  return spec;
}

void print_scale_header(const char* title) {
  std::printf("\n%s\n", title);
  std::printf("%-4s %5s %5s %5s %8s %9s %10s %8s %8s %10s %10s %6s %7s %7s %9s %7s %6s\n", "dp",
              "steps", "GPUs", "ranks", "ops", "generate", "analyze", "M_S", "M_W", "total",
              "wall", "us/op", "replays", "ns/o/r", "peak MiB", "S", "M_W");
}

void scale_row(int dp, int steps) {
  auto spec = scale_spec(dp);
  spec.steps = steps;
  const Clock clock;
  const auto trace = sp::whatif::generate_synthetic_trace(spec);
  const double gen_s = clock.cpu();
  const Measured m = measure(trace.table, trace.meta, 1);
  const auto ops = static_cast<double>(trace.table.size());
  std::printf("%-4d %5d %5d %5d %8zu %9s %10s %8s %8s %10s %10s %6.3f %7zu %7.2f %9.1f %7.4f %6s\n",
              dp, steps, trace.meta.world_size, dp * spec.pp_size, trace.table.size(),
              fmt_ms(gen_s).c_str(), fmt_ms(m.analyze.cpu).c_str(), fmt_ms(m.ms.cpu).c_str(),
              fmt_ms(m.mw.cpu).c_str(), fmt_ms(m.total_cpu()).c_str(),
              fmt_ms(m.total_wall()).c_str(), m.total_cpu() / ops * 1e6, m.replays,
              m.total_cpu() / (ops * static_cast<double>(m.replays)) * 1e9,
              static_cast<double>(table_bytes(trace.table) + m.peak_heap) / kMiB, m.slowdown,
              fmt_mw(m.mw_value).c_str());
}

// Growing the job (dp) adds ops and attribution groups; growing the trace (steps) adds ops only.
void bench_scale(const std::vector<int>& dp_sizes, const std::vector<int>& step_counts) {
  print_scale_header(
      "Synthetic jobs, tp=8 pp=8, 32 micro-batches, one rank 1.3x slow: full analysis, "
      "single-threaded, CPU time (wall beside)");
  for (const int dp : dp_sizes) scale_row(dp, 20);
  if (step_counts.empty()) return;
  const int dp = *std::max_element(dp_sizes.begin(), dp_sizes.end());
  print_scale_header("Same job at the largest dp, trace length varied");
  for (const int steps : step_counts) scale_row(dp, steps);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = SP_TEST_DATA_DIR;
  int repeats = 5;
  std::vector<int> dp_sizes{16, 32, 64};
  std::vector<int> step_counts{5, 10};
  bool skip_reference = false;
  bool skip_scale = false;
  CLI::App app{"Time and memory of the full what-if analysis (analysis + M_S + M_W)."};
  app.add_option("--data", data_dir, "folder holding ST/ and SE/ reference traces");
  app.add_option("--repeat", repeats, "runs per reference trace (best time is kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dp", dp_sizes, "data-parallel sizes of the synthetic jobs")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", step_counts,
                 "trace lengths (steps) to time at the largest dp (default 5 10; 20 is above)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--skip-reference", skip_reference, "only the synthetic jobs");
  app.add_flag("--skip-scale", skip_scale, "only the reference traces");
  CLI11_PARSE(app, argc, argv);

  try {
    if (!skip_reference) bench_reference(data_dir, repeats);
    if (!skip_scale) bench_scale(dp_sizes, step_counts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sp_bench_analysis: %s\n", e.what());
    return 1;
  }
  std::printf("\nprocess max RSS: %.1f MiB\n",
              static_cast<double>(sp::bench::process_max_rss_bytes()) / kMiB);
  return 0;
}
