// sp_bench_online_soak: rank 0's analyzer on a long simulated run (issue 26's "long runs"): a
// synthetic job of N ranks, its steps fed one after another as the live path feeds them (every
// rank's summary of a step, then the next step), the JSONL written as live and the report
// directory rewritten every --report-every steps. Measured: the process's resident memory
// sampled every --sample-every steps and its slope (least squares over the samples after the
// first fifth of the run, where the windows and pools have filled), the JSONL's bytes per
// analysed step over the second half of the run, and the report files' size at the middle and
// at the end (bounded rewrites: they must not grow with the run). One markdown row on stdout.
//
// Steps: kDistinctSteps generated once (the generator's jitter makes them differ), then fed
// again and again, renumbered; the analysis keeps no per-step-number state beyond its windows.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace {

using sp::runtime::StepSummary;
constexpr int kDistinctSteps = 8;
constexpr double kMiB = 1024.0 * 1024.0;

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / kMiB;
}

double file_bytes(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0.0 : static_cast<double>(n);
}

double report_bytes(const std::filesystem::path& dir) {
  double sum = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) sum += file_bytes(e.path());
  return sum;
}

// Least-squares slope of y over x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (n < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = n * sxx - sx * sx;
  return d == 0 ? 0 : (n * sxy - sx * sy) / d;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rank 0's analyzer on a long simulated run: memory slope and JSONL bytes per step"};
  int ranks = 4096, pp = 8, steps = 1000, report_every = 100, sample_every = 25;
  std::string out = "/tmp/sp_soak";
  app.add_option("--ranks", ranks, "simulated ranks (dp x pp)")->check(CLI::PositiveNumber);
  app.add_option("--pp", pp, "pipeline stages")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps fed")->check(CLI::Range(50, 1000000));
  app.add_option("--report-every", report_every, "rewrite the report every this many steps");
  app.add_option("--sample-every", sample_every, "sample the resident memory every this many steps");
  app.add_option("--out", out, "output directory (JSONL and report/)");
  int timeline_ranks = 0;
  app.add_option("--timeline-ranks", timeline_ranks, "OnlineConfig::timeline_ranks (0: the byte budget's)");
  CLI11_PARSE(app, argc, argv);
  if (ranks % pp != 0) {
    std::fprintf(stderr, "--ranks %d is not a multiple of --pp %d\n", ranks, pp);
    return 2;
  }

  sp::online::testing::SyntheticJob job;
  job.pp = pp;
  job.dp = ranks / pp;
  job.microbatches = pp > 1 ? 8 : 2;
  job.jitter = 0.02;
  job.rank_speed.assign(6, 1.0);
  job.rank_speed[5] = 1.3;  // one straggler: every step takes the naming path
  const auto run = sp::online::testing::run_synthetic(job, kDistinctSteps);

  std::filesystem::remove_all(out);
  sp::online::OnlineConfig cfg;
  cfg.world_size = ranks;
  cfg.output_dir = out;
  cfg.timeline_ranks = timeline_ranks;
  cfg.log_sink = [](const std::string&) {};
  sp::online::OnlineAnalyzer analyzer(cfg);
  const std::filesystem::path jsonl = std::filesystem::path(out) / cfg.jsonl_name;
  const std::filesystem::path report = std::filesystem::path(out) / "report";

  std::vector<double> xs, ys;
  double jsonl_at_half = 0, report_at_half = 0, rss_start = 0, rss_end = 0, rss_peak = 0;
  int analysed = 0, analysed_at_half = 0, rewrites = 0;
  for (int k = 0; k < steps; ++k) {
    std::vector<StepSummary> step = run.steps[static_cast<size_t>(k % kDistinctSteps)];
    for (StepSummary& s : step) {
      s.step = k;
      for (const auto& v : analyzer.add(std::move(s))) analysed += v.analyzed ? 1 : 0;
    }
    if ((k + 1) % report_every == 0) {
      (void)analyzer.write_report(report.string());
      ++rewrites;
    }
    if (k + 1 == steps / 2) {
      jsonl_at_half = file_bytes(jsonl);
      report_at_half = report_bytes(report);
      analysed_at_half = analysed;
    }
    if ((k + 1) % sample_every == 0) {
      const double r = rss_mib();
      rss_peak = std::max(rss_peak, r);
      if (k + 1 >= steps / 5) {
        if (xs.empty()) rss_start = r;
        xs.push_back(k + 1);
        ys.push_back(r);
        rss_end = r;
      }
    }
  }
  for (const auto& v : analyzer.finish()) analysed += v.analyzed ? 1 : 0;
  const double per_step = (file_bytes(jsonl) - jsonl_at_half) /
                          std::max(1, analysed - analysed_at_half);
  std::printf("| %d | %d x %d | %d | %d | %.1f | %.1f | %.1f | %+.2f | %.0f | %.1f / %.1f | %d |\n",
              ranks, job.dp, pp, steps, analysed, rss_start, rss_end, rss_peak,
              slope(xs, ys) * 1000.0, per_step, report_at_half / 1024.0,
              report_bytes(report) / 1024.0, rewrites);
  return 0;
}
