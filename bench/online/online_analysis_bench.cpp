// sp_bench_online_analysis: rank 0's per-step analysis (OnlineAnalyzer, the analyzer alone, no
// transport: bench/scale/ measures end to end) on synthetic jobs from 64 to 4096 ranks,
// data-parallel only and dp x pp. Per step: CPU time of the analysing thread (median over the
// measured steps), wall time, and its phases measured alone (op model, ideal durations,
// what-if metrics); then the growth exponent of the CPU time with the job.
//
// sp_bench_online_memory, the same source with the counting allocator (bench/heap_counter.cpp):
// allocations per step (all, and those of the op model and of the metrics), the heap's
// high-water mark during the step, and what the analyzer keeps between steps. Two binaries,
// because counting costs time in allocation-heavy code (the op model allocates ~4 blocks per
// node), which would inflate the times.
//
// --callgrind: run under `valgrind --tool=callgrind --instr-atstart=no`; only the measured
// steps' analysis is instrumented, so callgrind's instruction count is that of those steps
// (repeatable on a shared machine, unlike times). bench/online/run_online_scaling.sh does both.
#include <CLI/CLI.hpp>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../heap_counter.h"
#include "straggler_probe/thread_clock.h"
#include "ideal/ideal_window.h"
#include "decision/noise_verdict.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model_builder.h"
#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace {

using sp::online::testing::Schedule;
using sp::online::testing::SyntheticJob;
using sp::runtime::StepSummary;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kDistinctSteps = 4;  // generated once, then fed again and again (renumbered)

double thread_cpu_s() { return sp::runtime::thread_cpu_seconds(); }

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  std::string layout;  // "dp" or "dp x pp"
  SyntheticJob job;
  int ranks() const { return job.dp * job.pp; }
};

Shape make_shape(bool pipeline, int ranks, Schedule schedule) {
  Shape s;
  s.layout = pipeline ? (schedule == Schedule::kGPipe ? "dp x pp" : "dp x pp 1F1B") : "dp";
  s.job.pp = pipeline ? 8 : 1;
  s.job.dp = ranks / s.job.pp;
  s.job.microbatches = pipeline ? 8 : 2;
  s.job.schedule = schedule;
  s.job.jitter = 0.02;
  s.job.rank_speed.assign(6, 1.0);
  s.job.rank_speed[5] = 1.3;  // one straggler, so that every step takes the straggling path
  return s;
}

struct Row {
  Shape shape;
  size_t nodes = 0;
  double cpu = 0, wall = 0, model = 0, ideals = 0, metrics = 0, noise = 0;
  double first_cpu = 0;  // the first analysed step (the noise model fills its pools there)
  double allocs = 0, peak_mib = 0, kept_mib = 0;
  double model_allocs = 0, metrics_allocs = 0;  // of the phases measured alone
  size_t full_replays = 0, lane_passes = 0;
  bool boundary = false;
};

std::vector<StepSummary> renumbered(const std::vector<StepSummary>& step, int64_t number) {
  std::vector<StepSummary> out = step;
  for (StepSummary& s : out) s.step = number;
  return out;
}

// The noise model's part of a step (NoiseVerdict: its window, the null draws, the tests, the
// alarms) on a verdict carrying what it reads from the metrics; the cause rules' culprit is
// left out (cause none), which skips only the naming, not the draws or the tests.
sp::online::StepVerdict metrics_verdict(int64_t step, const sp::online::SlowdownMetrics& w) {
  sp::online::StepVerdict v;
  v.step = step;
  v.analyzed = true;
  v.ideal_s = w.T_ideal;
  v.S = w.S();
  v.worker_S = w.worker_S;
  v.dp_S = w.dp_S;
  v.stage_S = w.stage_S;
  return v;
}

// Phases on their own, on the same steps with a warm window: op model, ideals, metrics, and
// (when on) the noise model.
void measure_phases(const std::vector<std::vector<StepSummary>>& steps, int measure, bool noise_on, Row* row) {
  const sp::online::OnlineConfig defaults;
  // As StepAnalysis: the transfer reference tests at the noise model's level when it is on.
  sp::online::IdealWindow window{defaults.ideal, noise_on ? defaults.noise.alpha : 0.0};
  sp::online::SlowdownAnalysis analysis;
  sp::online::SlowdownMetrics metrics;
  sp::online::SeqWindow seq(defaults.ideal.window_steps);
  sp::online::NoiseVerdict noise(defaults.noise, defaults.ideal.window_steps);
  std::vector<double> model_s, ideals_s, metrics_s, noise_s, model_allocs, metrics_allocs;
  for (int k = 0; k < 20 + measure; ++k) {
    const auto& step = steps[static_cast<size_t>(k % kDistinctSteps)];
    std::vector<const StepSummary*> by_rank;
    for (const StepSummary& s : step) by_rank.push_back(&s);
    std::string error;
    const size_t a0 = sp::bench::heap_alloc_count();
    const double t0 = thread_cpu_s();
    const auto model = sp::online::build_step_model(by_rank, sp::online::ModelOptions{}, &error);
    const double t1 = thread_cpu_s();
    const size_t a1 = sp::bench::heap_alloc_count();
    window.push(sp::online::collect_samples(*model));
    const sp::online::Ideals ideals = window.ideals(*model);
    const double t2 = thread_cpu_s();
    const size_t a2 = sp::bench::heap_alloc_count();
    analysis.compute(*model, ideals, 0.03, true, &metrics);
    window.remember(ideals);
    const double t3 = thread_cpu_s();
    const size_t a3 = sp::bench::heap_alloc_count();
    seq.push(*model);
    const double t4 = thread_cpu_s();
    if (noise_on) {
      noise.push(*model);
      sp::online::StepVerdict v = metrics_verdict(k, metrics);
      noise.judge(*model, seq.evidence(), 1.0, metrics.dp_fix_gain, &analysis, &v);
    }
    const double t5 = thread_cpu_s();
    if (k < 20) continue;  // the window fills first, as in the analyzer
    model_s.push_back(t1 - t0);
    ideals_s.push_back(t2 - t1);
    metrics_s.push_back(t3 - t2);
    noise_s.push_back(t5 - t4);
    model_allocs.push_back(static_cast<double>(a1 - a0));
    metrics_allocs.push_back(static_cast<double>(a3 - a2));
    row->nodes = model->nodes.size();
    row->full_replays = analysis.work().full_replays;
    row->boundary = analysis.work().dp.boundary;
  }
  row->model = median(model_s);
  row->ideals = median(ideals_s);
  row->metrics = median(metrics_s);
  row->noise = median(noise_s);
  row->model_allocs = median(model_allocs);
  row->metrics_allocs = median(metrics_allocs);
}

// out_dir: when set, the analyzer writes its verdict JSONL there (one folder per cell), so that
// a change meant to be pure performance can be checked for identical answers by a diff.
Row measure(const Shape& shape, int warmup, int measure_steps, bool noise_on, bool callgrind,
            const std::string& out_dir) {
  Row row;
  row.shape = shape;
  const auto run = sp::online::testing::run_synthetic(shape.job, kDistinctSteps);
  const size_t live0 = sp::bench::heap_live_bytes();
  sp::online::OnlineConfig cfg;
  cfg.world_size = shape.ranks();
  cfg.noise.enabled = noise_on;
  if (!out_dir.empty()) {
    cfg.output_dir = out_dir + "/" + (shape.job.pp > 1 ? "pp" : "dp") + "_" + std::to_string(shape.ranks());
  }
  size_t lines = 0;
  cfg.log_sink = [&lines](const std::string&) { ++lines; };
  sp::online::OnlineAnalyzer analyzer(cfg);
  std::vector<double> cpu, wall, allocs, peak;
  for (int k = 0; k < warmup + measure_steps; ++k) {
    std::vector<StepSummary> step = renumbered(run.steps[static_cast<size_t>(k % kDistinctSteps)], k);
    const bool measured = k >= warmup;
    const size_t live = sp::bench::heap_live_bytes();
    sp::bench::heap_reset_peak();
    const size_t allocs0 = sp::bench::heap_alloc_count();
    if (measured && callgrind) CALLGRIND_START_INSTRUMENTATION;
    const double c0 = thread_cpu_s(), w0 = wall_s();
    for (StepSummary& s : step) analyzer.add(std::move(s));
    const double c1 = thread_cpu_s(), w1 = wall_s();
    if (measured && callgrind) CALLGRIND_STOP_INSTRUMENTATION;
    if (k == 0) row.first_cpu = c1 - c0;
    if (!measured) continue;
    cpu.push_back(c1 - c0);
    wall.push_back(w1 - w0);
    allocs.push_back(static_cast<double>(sp::bench::heap_alloc_count() - allocs0));
    peak.push_back(static_cast<double>(sp::bench::heap_peak_bytes() - live) / kMiB);
  }
  if (analyzer.stats().steps_analyzed != static_cast<uint64_t>(warmup + measure_steps) || lines == 0) {
    std::fprintf(stderr, "analysis failed: %s\n", analyzer.stats().last_error.c_str());
    std::exit(1);
  }
  row.kept_mib = static_cast<double>(sp::bench::heap_live_bytes() - live0) / kMiB;
  if (!cfg.output_dir.empty()) {  // the report too (report.json, timeline.json), after the kept heap
    const sp::online::Status st = analyzer.write_report(cfg.output_dir + "/report");
    if (!st.ok) std::fprintf(stderr, "report: %s\n", st.message.c_str());
  }
  row.cpu = median(cpu);
  row.wall = median(wall);
  row.allocs = median(allocs);
  row.peak_mib = median(peak);
  if (!callgrind) measure_phases(run.steps, measure_steps, noise_on, &row);
  return row;
}

// Least-squares slope of log(cpu) over log(ranks).
double growth_exponent(const std::vector<Row>& rows) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Row& r : rows) {
    const double x = std::log(r.shape.ranks()), y = std::log(r.cpu);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(rows.size());
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

void print(const std::vector<Row>& rows) {
  if (SP_BENCH_COUNTS_HEAP) {
    std::printf("| layout | ranks (dp x pp, mb) | nodes | allocations per step | of the op model | of the metrics | heap peak during the step | kept between steps |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  } else {
    std::printf("| layout | ranks (dp x pp, mb) | nodes | analysis CPU | wall | first step | op model | ideals | metrics | noise model | full replays | dp ranks by |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  }
  for (const Row& r : rows) {
    std::printf("| %s | %d (%d x %d, %d) | %zu |", r.shape.layout.c_str(), r.shape.ranks(),
                r.shape.job.dp, r.shape.job.pp, r.shape.job.microbatches, r.nodes);
    if (SP_BENCH_COUNTS_HEAP) {
      std::printf(" %.0f | %.0f | %.0f | %.1f MiB | %.1f MiB |\n", r.allocs, r.model_allocs,
                  r.metrics_allocs, r.peak_mib, r.kept_mib);
    } else {
      std::printf(" %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %zu | %s |\n",
                  r.cpu * 1e3, r.wall * 1e3, r.first_cpu * 1e3, r.model * 1e3, r.ideals * 1e3,
                  r.metrics * 1e3, r.noise * 1e3, r.full_replays, r.boundary ? "boundary" : "full replays");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Rank 0's per-step online analysis on synthetic jobs, 64 to 4096 ranks."};
  std::vector<int> ranks{64, 128, 256, 512, 1024, 2048, 4096};
  std::string layout = "both";
  int warmup = 20, measure_steps = 5;
  bool callgrind = false, one_f_one_b = false;
  std::string noise = "on", out_dir;
  app.add_option("--ranks", ranks, "job sizes (dp x pp uses pp 8)")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--layout", layout, "dp, pp or both")->check(CLI::IsMember({"dp", "pp", "both"}));
  app.add_option("--warmup", warmup, "steps analysed before measuring (the ideal window is 20)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--measure", measure_steps, "steps measured (median)")->check(CLI::PositiveNumber);
  app.add_option("--noise", noise, "the noise model (NoiseConfig::enabled), on by default as in the product")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--out", out_dir, "also write each cell's verdict JSONL and report under this folder (to diff answers)");
  app.add_flag("--1f1b", one_f_one_b, "dp x pp jobs in 1F1B order instead of GPipe");
  app.add_flag("--callgrind", callgrind, "instrument only the measured steps (run under callgrind)");
  CLI11_PARSE(app, argc, argv);

  for (const bool pipeline : {false, true}) {
    if ((pipeline && layout == "dp") || (!pipeline && layout == "pp")) continue;
    std::vector<Row> rows;
    for (int n : ranks) {
      if (pipeline && n % 8 != 0) continue;
      rows.push_back(measure(make_shape(pipeline, n, one_f_one_b ? Schedule::k1F1B : Schedule::kGPipe),
                             warmup, measure_steps, noise == "on", callgrind, out_dir));
      std::fflush(stdout);
    }
    if (callgrind) continue;
    print(rows);
    if (rows.size() >= 2 && !SP_BENCH_COUNTS_HEAP) {
      std::printf("\ngrowth exponent (CPU time ~ ranks^k, least squares): k = %.2f", growth_exponent(rows));
      const Row* a = nullptr;
      const Row* b = nullptr;
      for (const Row& r : rows) {
        if (r.shape.ranks() == 512) a = &r;
        if (r.shape.ranks() == 4096) b = &r;
      }
      if (a && b) std::printf("; 512 -> 4096 ranks: %.1fx the CPU time for 8x the ranks", b->cpu / a->cpu);
      std::printf("\n\n");
    }
  }
  if (SP_BENCH_COUNTS_HEAP) {
    std::printf("process max RSS: %.0f MiB\n", static_cast<double>(sp::bench::process_max_rss_bytes()) / kMiB);
  }
  return 0;
}
