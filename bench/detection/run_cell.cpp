#include "run_cell.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "cell_io.h"
#include "straggler_probe/online/analyzer.h"

namespace sp::bench::detection {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

CellInfo info_of(const Cell& cell, const online::testing::NoisyRun& run, int warmup) {
  CellInfo info;
  info.name = cell.name;
  info.shape = cell.shape;
  info.scenario = cell.scenario;
  info.ranks = cell.ranks;
  info.jitter = cell.jitter;
  info.seed = cell.job.seed;
  info.steps = cell.job.steps;
  info.warmup = warmup;
  info.verdicts = "straggler_probe_steps.jsonl";
  info.report = "report/report.json";
  if (!cell.twin.empty()) info.twin = "../" + cell.twin.substr(cell.twin.find('/') + 1);
  // A fault's culprit for the alarms: its targets on a step where it counts (all such steps
  // name the same ones, except sequence lengths, whose busiest rank changes: any target).
  for (const auto& f : cell.job.faults) {
    CellFault cf;
    cf.culprit.cause = std::string(online::testing::fault_cause(f.kind));
    cf.onset = f.onset;
    cf.every = f.every;
    if (f.kind != online::testing::FaultKind::kSeqLens) {
      for (const auto& t : run.truth) {
        for (const auto& a : t.active) {
          if (a.cause == cf.culprit.cause && !a.targets.empty()) cf.culprit.targets = a.targets;
        }
        if (!cf.culprit.targets.empty()) break;
      }
    }
    info.faults.push_back(std::move(cf));
  }
  return info;
}

std::vector<TruthStep> truth_of(const online::testing::NoisyRun& run) {
  std::vector<TruthStep> out;
  for (const auto& t : run.truth) {
    TruthStep s;
    s.step = t.step;
    for (const auto& a : t.active) s.active.push_back({a.cause, a.targets});
    s.marginal = t.marginal;
    s.measured_slowdown = t.measured_slowdown;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

CellRun run_cell(const Cell& cell, const std::string& dir, int warmup) {
  CellRun r;
  std::filesystem::remove_all(dir);
  auto t0 = Clock::now();
  online::testing::NoisyRun run = online::testing::run_noisy(cell.job);
  r.generate_s = since(t0);
  write_cell(dir, info_of(cell, run, warmup), truth_of(run));

  online::OnlineConfig cfg;  // the analyzer's defaults: nothing here is tuned to the benchmark
  cfg.world_size = cell.ranks;
  cfg.output_dir = dir;
  cfg.summary_interval = 0;
  cfg.timeline_steps = 0;
  t0 = Clock::now();
  online::OnlineAnalyzer analyzer(cfg);
  for (auto& step : run.run.steps) {
    for (auto& summary : step) analyzer.add(std::move(summary));
    step.clear();
    step.shrink_to_fit();
  }
  analyzer.finish();
  const online::Status st = analyzer.write_report(dir + "/report");
  r.analyze_s = since(t0);
  if (!st.ok) throw std::runtime_error(cell.name + ": report: " + st.message);
  const online::OnlineStats stats = analyzer.stats();
  r.steps_analyzed = stats.steps_analyzed;
  r.steps_skipped = stats.steps_skipped;
  r.last_error = stats.last_error;
  return r;
}

}  // namespace sp::bench::detection
