#include "run_cell.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "cell_io.h"
#include "straggler_probe/online/analyzer.h"

namespace sp::bench::detection {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

CellInfo info_of(const Cell& cell, const std::vector<online::testing::StepTruth>& truth, int warmup) {
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
      for (const auto& t : truth) {
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

std::vector<TruthStep> truth_of(const std::vector<online::testing::StepTruth>& truth) {
  std::vector<TruthStep> out;
  for (const auto& t : truth) {
    TruthStep s;
    s.step = t.step;
    for (const auto& a : t.active) s.active.push_back({a.cause, a.targets});
    s.marginal = t.marginal;
    s.measured_slowdown = t.measured_slowdown;
    out.push_back(std::move(s));
  }
  return out;
}

// Moves a piece's clocks so that its first step starts where the previous piece ended.
void continue_after(uint64_t* end_ns, std::vector<std::vector<runtime::StepSummary>>* steps) {
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& step : *steps) {
    for (const auto& s : step) first = std::min(first, s.step_start_ns), last = std::max(last, s.step_end_ns);
  }
  const uint64_t shift = *end_ns > first ? *end_ns - first : 0;
  for (auto& step : *steps) {
    for (auto& s : step) {
      s.step_start_ns += shift;
      s.step_end_ns += shift;
      for (sp_event& e : s.ops) e.start_ns += shift, e.end_ns += shift;
    }
  }
  *end_ns = last + shift;
}

}  // namespace

CellRun run_cell(const Cell& cell, const std::string& dir, int warmup, int piece_steps) {
  CellRun r;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  online::OnlineConfig cfg;  // the analyzer's defaults: nothing here is tuned to the benchmark
  cfg.world_size = cell.ranks;
  cfg.output_dir = dir;
  cfg.recap_interval = 0;
  cfg.timeline_steps = 0;
  online::OnlineAnalyzer analyzer(cfg);
  std::vector<online::testing::StepTruth> truth;
  uint64_t end_ns = 0;
  // The job in pieces, so that memory stays bounded in long runs of large jobs.
  for (int64_t first = 0; first < cell.job.steps; first += piece_steps) {
    online::testing::NoisyScenario piece = cell.job;
    piece.first_step = first;
    piece.steps = static_cast<int>(std::min<int64_t>(piece_steps, cell.job.steps - first));
    auto t0 = Clock::now();
    online::testing::NoisyRun run = online::testing::run_noisy(piece);
    continue_after(&end_ns, &run.run.steps);
    r.generate_s += since(t0);
    truth.insert(truth.end(), run.truth.begin(), run.truth.end());
    t0 = Clock::now();
    for (auto& step : run.run.steps) {
      for (auto& summary : step) analyzer.add(std::move(summary));
      step.clear();
      step.shrink_to_fit();
    }
    r.analyze_s += since(t0);
  }
  const auto t0 = Clock::now();
  analyzer.finish();
  const online::Status st = analyzer.write_report(dir + "/report");
  r.analyze_s += since(t0);
  if (!st.ok) throw std::runtime_error(cell.name + ": report: " + st.message);
  write_cell(dir, info_of(cell, truth, warmup), truth_of(truth));
  const online::OnlineStats stats = analyzer.stats();
  r.steps_analyzed = stats.steps_analyzed;
  r.steps_skipped = stats.steps_skipped;
  r.last_error = stats.last_error;
  return r;
}

}  // namespace sp::bench::detection
