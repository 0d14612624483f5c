// The ledger (issue 25, src/ledger.h): what each culprit cost, against what the synthetic jobs
// really lost. Without jitter the truth is exact: a job with a planted straggler loses, per step,
// (its step time - the same job's clean step time) x its GPUs; the ledger's sum must match it
// within 1%, and the share charged to the planted rank (its what-if fix gain) too. The ledger's
// own sums (by cause, by host) must add up, the JSONL, report.json, the summary and the closing
// line must carry it, and exclude_hosts.txt must name the slow rank's host.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "output/ledger.h"
#include "straggler_probe/online/analysis_driver.h"
#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

namespace fs = std::filesystem;
using testing::run_synthetic;
using testing::Schedule;
using testing::SyntheticJob;
using testing::SyntheticRun;

constexpr int kSteps = 40;
constexpr size_t kWarmup = 2;  // as slowdown_test: the ideal window's first steps hold the straggler

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RankTable hosts(int world) {
  RankTable t(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) t[static_cast<size_t>(r)] = {"node-" + std::to_string(r / 2), r % 2, r % 2};
  return t;
}

struct LedgerRun {
  std::vector<nlohmann::json> steps;  // the JSONL's step records, in step order
  nlohmann::json report;
  std::string exclude_hosts;
  std::vector<std::string> lines;
};

LedgerRun run_ledger(const SyntheticRun& run, const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("sp_ledger_" + name);
  fs::remove_all(dir);
  AnalysisSettings s;
  s.world_size = static_cast<int>(run.steps.at(0).size());
  s.out_dir = dir.string();
  s.recap_interval = 20;
  LedgerRun out;
  AnalysisDriver driver(
      s, [&](const std::string& l) { out.lines.push_back(l); }, [](const std::string&) {});
  driver.set_rank_table(hosts(s.world_size));
  for (const auto& step : run.steps) driver.analyze_step(step[0].step, step);
  driver.finish();
  EXPECT_TRUE(driver.write_report({}).ok);
  std::ifstream jsonl(dir / "straggler_probe_steps.jsonl");
  for (std::string row; std::getline(jsonl, row);) {
    auto j = nlohmann::json::parse(row);
    if (j.value("event", "") == "step" && j.at("analyzed").get<bool>()) out.steps.push_back(std::move(j));
  }
  out.report = nlohmann::json::parse(slurp(dir / "report.json"));
  out.exclude_hosts = slurp(dir / "exclude_hosts.txt");
  EXPECT_TRUE(fs::exists(dir / "exclude_hosts.txt"));
  return out;
}

double sum_of(const nlohmann::json& object) {
  double s = 0;
  for (const auto& [k, v] : object.items()) s += v.get<double>();
  return s;
}

// The ledger's own arithmetic: each record's loss is (time - ideal) x gpus, the report sums the
// records, by_cause sums to the loss, by_host and by_stage to what the culprits were charged.
void expect_consistent(const LedgerRun& r, int gpus) {
  ASSERT_FALSE(r.steps.empty());
  double lost = 0, time = 0, fixable = 0;
  for (const auto& j : r.steps) {
    const auto& l = j.at("lost");
    const double expected = std::max(0.0, j.at("time_s").get<double>() - j.at("ideal_s").get<double>()) * gpus;
    EXPECT_NEAR(l.at("gpu_s").get<double>(), expected, 1e-9 * gpus) << j.dump();
    EXPECT_EQ(l.at("gpus").get<int>(), gpus);
    EXPECT_EQ(l.at("cause"), j.at("cause"));
    EXPECT_LE(l.at("fix_gain_gpu_s").get<double>(), l.at("gpu_s").get<double>() + 1e-12);
    if (l.at("target").is_null()) {
      EXPECT_EQ(l.at("fix_gain_gpu_s").get<double>(), 0.0);
    }
    lost += l.at("gpu_s").get<double>();
    fixable += l.at("fix_gain_gpu_s").get<double>();
    time += j.at("time_s").get<double>() * gpus;
  }
  const auto& L = r.report.at("lost");
  EXPECT_EQ(L.at("analyzed_steps").get<size_t>(), r.steps.size());
  EXPECT_EQ(L.at("gpus").get<int>(), gpus);
  EXPECT_NEAR(L.at("lost_gpu_seconds").get<double>(), lost, 1e-9 * lost);
  EXPECT_NEAR(L.at("gpu_seconds").get<double>(), time, 1e-9 * time);
  EXPECT_NEAR(L.at("lost_share").get<double>(), lost / time, 1e-12);
  EXPECT_NEAR(sum_of(L.at("by_cause")), lost, 1e-9 * lost);
  EXPECT_NEAR(L.at("fixable_gpu_seconds").get<double>(), fixable, 1e-9 * std::max(1.0, fixable));
  EXPECT_NEAR(sum_of(L.at("by_host")), fixable, 1e-9 * std::max(1.0, fixable));
  EXPECT_NEAR(sum_of(L.at("by_stage")), fixable, 1e-9 * std::max(1.0, fixable));
  EXPECT_LE(L.at("top_ranks").size(), Ledger::kTopRanks);
}

// A planted slow rank: the ledger's loss against the measured one (slow - clean step times, the
// same steps), and the share charged to that rank against it, both within 1%.
void expect_slow_rank_measured(SyntheticJob j, int rank, double factor, const std::string& name) {
  const int world = j.dp * j.pp;
  const SyntheticRun clean = run_synthetic(j, kSteps);
  j.rank_speed.assign(static_cast<size_t>(world), 1.0);
  j.rank_speed[static_cast<size_t>(rank)] = factor;
  const SyntheticRun slow = run_synthetic(j, kSteps);
  const LedgerRun r = run_ledger(slow, name);
  expect_consistent(r, world);
  ASSERT_EQ(r.steps.size(), static_cast<size_t>(kSteps));
  double measured = 0, ledger = 0, named = 0;
  for (size_t i = kWarmup; i < r.steps.size(); ++i) {
    measured += (slow.step_time_s[i] - clean.step_time_s[i]) * world;
    ledger += r.steps[i].at("lost").at("gpu_s").get<double>();
    if (r.steps[i].at("lost").at("target") == "rank:" + std::to_string(rank)) {
      named += r.steps[i].at("lost").at("fix_gain_gpu_s").get<double>();
    }
  }
  ASSERT_GT(measured, 0);
  ::testing::Test::RecordProperty("ledger_over_measured", std::to_string(ledger / measured));
  ::testing::Test::RecordProperty("named_over_measured", std::to_string(named / measured));
  EXPECT_NEAR(ledger / measured, 1.0, 0.01) << "ledger " << ledger << " measured " << measured;
  EXPECT_NEAR(named / measured, 1.0, 0.01) << "named " << named << " measured " << measured;
  // The whole run in report.json: the slow rank on top, its host the one to drain.
  const auto& top = r.report.at("lost").at("top_ranks");
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0].at("rank").get<int>(), rank);
  const std::string host = "node-" + std::to_string(rank / 2);
  EXPECT_EQ(top[0].at("host"), host);
  EXPECT_EQ(top[0].at("gpu").get<int>(), rank % 2);
  EXPECT_EQ(r.exclude_hosts, host + "\n");
  // The closing line, last: the loss and the culprit with its place.
  ASSERT_GE(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[r.lines.size() - 2].rfind("straggler_probe report: ", 0), 0u);
  const std::string& last = r.lines.back();
  EXPECT_EQ(last.rfind("straggler_probe lost ", 0), 0u) << last;
  EXPECT_NE(last.find("worker on " + host + " gpu " + std::to_string(rank % 2) + " (rank " + std::to_string(rank) + ")"),
            std::string::npos)
      << last;
  bool summary_has_ledger = false;
  for (const std::string& l : r.lines) summary_has_ledger |= l.rfind("straggler_probe recap", 0) == 0 && l.find("\nlost ") != std::string::npos;
  EXPECT_TRUE(summary_has_ledger);
}

TEST(OnlineLedger, DataParallelSlowRankCostsWhatTheJobMeasured) {
  SyntheticJob j;
  j.dp = 8;
  j.microbatches = 2;
  expect_slow_rank_measured(j, 5, 1.3, "dp");
}

TEST(OnlineLedger, PipelineSlowRankCostsWhatTheJobMeasured) {
  SyntheticJob j;
  j.dp = 4;
  j.pp = 4;
  j.microbatches = 8;
  j.schedule = Schedule::k1F1B;
  expect_slow_rank_measured(j, 9, 1.3, "1f1b");
}

// A clean job with jitter: the loss is jitter's (the ledger still adds up), nobody is charged
// more than the few steps the noise model names, and there is no host to drain.
TEST(OnlineLedger, CleanJitteryJobChargesNoCulpritAndDrainsNoHost) {
  SyntheticJob j;
  j.dp = 8;
  j.jitter = 0.02;
  const LedgerRun r = run_ledger(run_synthetic(j, kSteps), "clean");
  expect_consistent(r, 8);
  const auto& L = r.report.at("lost");
  EXPECT_GT(L.at("lost_gpu_seconds").get<double>(), 0.0);
  EXPECT_LT(L.at("fixable_gpu_seconds").get<double>(), 0.01 * L.at("gpu_seconds").get<double>()) << L.dump();
  EXPECT_EQ(r.exclude_hosts, "");
  EXPECT_EQ(r.lines.back().rfind("straggler_probe lost ", 0), 0u) << r.lines.back();
}

TEST(OnlineLedger, StepEntryOfAStageAndOfNoCulprit) {
  StepVerdict v;
  v.analyzed = true;
  v.time_s = 2.0;
  v.ideal_s = 1.5;
  v.rank_dp = {0, 1, 0, 1};
  v.rank_stage = {0, 0, 1, 1};
  v.cause = Cause::kStageImbalance;
  v.worst = Culprit::stage(1);
  v.fix_gain_s = 0.25;
  auto j = step_loss_json(step_loss(v));
  EXPECT_EQ(j.dump(), R"({"gpu_s":2.0,"gpus":4,"cause":"stage-imbalance","target":"stage:1","host":null,"gpu":null,)"
                      R"("stage":1,"fix_gain_gpu_s":1.0})");
  v.cause = Cause::kNone;
  v.worst = {};
  v.time_s = 1.0;  // faster than the ideal: nothing lost
  j = step_loss_json(step_loss(v));
  EXPECT_EQ(j.dump(), R"({"gpu_s":0.0,"gpus":4,"cause":"none","target":null,"host":null,"gpu":null,)"
                      R"("stage":null,"fix_gain_gpu_s":0.0})");
}

// The closing line: the loss, then the culprits largest first with their place, then what
// fixing them gives back; the report's sums of the same steps.
TEST(OnlineLedger, LineNamesEachCulpritWithItsPlace) {
  auto verdict = [](Cause cause, const std::string& worst, double time, double fix) {
    StepVerdict v;
    v.analyzed = true;
    v.time_s = time;
    v.ideal_s = 1.0;
    v.rank_dp = {0, 1, 0, 1};
    v.rank_stage = {0, 0, 1, 1};
    v.cause = cause;
    v.worst = Culprit::parse(worst).value();
    v.fix_gain_s = fix;
    if (worst == "rank:3") {
      v.worst_host = "node-17";
      v.worst_device = 3;
    }
    return v;
  };
  Ledger l;
  EXPECT_EQ(l.text(), "");
  l.add(verdict(Cause::kWorker, "rank:3", 1.5, 0.4));         // 2 of 6 GPU-s lost, 1.6 charged
  l.add(verdict(Cause::kStageImbalance, "stage:1", 1.25, 0.2));  // 1 of 5, 0.8 charged
  l.add(verdict(Cause::kNone, "", 1.25, 0.0));                // 1 of 5, unattributed
  l.add(verdict(Cause::kGc, "rank:0", 1.0, 0.0));             // nothing lost
  EXPECT_EQ(l.text(), "lost 20.0% of GPU time (0.00 of 0.01 GPU-h, 4 steps, 4 GPUs): 8.0% worker on node-17 gpu 3 "
                      "(rank 3), 4.0% stage-imbalance on stage 1; fixing them gives back 12.0%");
  const auto j = l.to_json();
  EXPECT_EQ(j.at("by_cause").dump(), R"({"gc":0.0,"stage-imbalance":1.0,"unattributed":1.0,"worker":2.0})")
      << "cause none is unattributed";
  EXPECT_EQ(j.at("by_host").dump(), R"({"node-17":1.6})");
  EXPECT_EQ(j.at("by_stage").dump(), R"({"0":0.0,"1":2.4000000000000004})");
  EXPECT_EQ(j.at("top_ranks").size(), 2u);
  EXPECT_EQ(j.at("top_ranks")[0].at("rank"), 3);
  EXPECT_NEAR(j.at("fixable_gpu_seconds").get<double>(), 2.4, 1e-12);
}

TEST(OnlineLedger, ExcludeHostsAreOpenWorkerAlarmsOnly) {
  const auto alarms = nlohmann::ordered_json::parse(R"([
    {"target": "rank:1", "cause": "worker", "cleared_step": null},
    {"target": "rank:3", "cause": "worker", "cleared_step": 40},
    {"target": "rank:2", "cause": "gc", "cleared_step": null},
    {"target": "stage:1", "cause": "worker", "cleared_step": null},
    {"target": "rank:0", "cause": "worker", "cleared_step": null},
    {"target": "host:node-9", "cause": "worker", "cleared_step": null},
    {"target": "host:bad name;rm", "cause": "worker", "cleared_step": null},
    {"target": "rank:99", "cause": "worker", "cleared_step": null}])");
  RankTable t = hosts(4);
  EXPECT_EQ(exclude_hosts_text(alarms, t), "node-0\nnode-9\n");
  EXPECT_EQ(exclude_hosts_text(nlohmann::ordered_json::array(), t), "");
  EXPECT_EQ(exclude_hosts_text(alarms, RankTable{}), "node-9\n");
}

}  // namespace
}  // namespace sp::online
