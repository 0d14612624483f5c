// Rank 0's analysis worker, fed the StepBatches the collector hands over (synthetic 4-rank
// steps, encoded as the transport carries them): every step the collector gave up, could not
// decode or dropped because the analysis fell behind is one skipped line, once, and counted and
// classified in report.json; complete steps are analysed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/analysis_worker.h"
#include "straggler_probe/step_summary.h"
#include "synthetic_job.h"

namespace sp::rank_pipeline {
namespace {

namespace fs = std::filesystem;

struct Printed {
  std::mutex mutex;
  std::vector<std::string> lines;
  void add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  }
  std::vector<std::string> starting(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (const auto& l : lines) {
      if (l.rfind(prefix, 0) == 0) out.push_back(l);
    }
    return out;
  }
};

StepBatch batch_of(const std::vector<runtime::StepSummary>& step) {
  StepBatch b;
  b.step = step.at(0).step;
  b.complete = true;
  for (const auto& s : step) b.by_rank.emplace_back(runtime::encode_summary(s));
  return b;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("sp_worker_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST(AnalysisWorker, GivenUpAndUnreadableStepsAreOneLineEachAndCountedInTheReport) {
  online::testing::SyntheticJob job;
  const auto run = online::testing::run_synthetic(job, 8);
  const fs::path dir = fresh_dir("skips");
  AnalysisOptions o;
  o.settings.world_size = 4;
  o.settings.out_dir = dir.string();
  o.settings.recap_interval = 0;
  Printed printed;
  std::string failure;
  AnalysisWorker worker(o, [&](const std::string& l) { printed.add(l); },
                        [&](const std::string& why) { failure = why; });
  for (size_t i = 0; i < run.steps.size(); ++i) {
    StepBatch b = batch_of(run.steps[i]);
    if (i == 2) {  // the collector gave up: rank 3 skipped it
      b.complete = false;
      b.by_rank[3].clear();
      b.missing = "3";
      b.why_incomplete = "no summary from rank(s) 3 (those ranks skipped it)";
    } else if (i == 5) {
      b.by_rank[1] = "not a summary";
    }
    worker.submit(std::move(b));
  }
  ASSERT_TRUE(worker.finish(std::chrono::seconds(30)));
  EXPECT_EQ(failure, "");

  const int64_t s2 = run.steps[2][0].step, s5 = run.steps[5][0].step;
  const auto skipped = printed.starting("straggler_probe step=");
  std::vector<std::string> skip_lines;
  for (const auto& l : skipped) {
    if (l.find(" skipped ") != std::string::npos) skip_lines.push_back(l);
  }
  ASSERT_EQ(skip_lines.size(), 2u) << ::testing::PrintToString(printed.lines);
  EXPECT_EQ(skip_lines[0], "straggler_probe step=" + std::to_string(s2) +
                               " skipped reason=\"incomplete: no summary from rank(s) 3 (those ranks skipped it)\"");
  EXPECT_EQ(skip_lines[1].rfind("straggler_probe step=" + std::to_string(s5) +
                                    " skipped reason=\"malformed: summary of rank 1 is malformed: ", 0),
            0u)
      << skip_lines[1];
  EXPECT_EQ(skipped.size(), 8u);  // every step: a verdict line or a skipped line
  EXPECT_EQ(worker.counters().steps_incomplete.load(), 1u);

  const auto report = read_json(dir / "report.json");
  EXPECT_EQ(report.at("steps_analyzed").get<int>(), 6);
  EXPECT_EQ(report.at("stats").at("steps_skipped").get<int>(), 2);
  EXPECT_EQ(report.at("stats").at("skip_reasons").at("incomplete").get<int>(), 1);
  EXPECT_EQ(report.at("stats").at("skip_reasons").at("malformed").get<int>(), 1);
  fs::remove_all(dir);
}

TEST(AnalysisWorker, StepsDroppedBecauseTheAnalysisFellBehindAreOneLineForTheRange) {
  online::testing::SyntheticJob job;
  const auto run = online::testing::run_synthetic(job, 12);
  AnalysisOptions o;
  o.settings.world_size = 4;
  o.max_lag = 2;
  o.settings.recap_interval = 0;
  o.fault = FaultInjection::kSlow;  // 500 ms per step: the queue overflows
  Printed printed;
  AnalysisWorker worker(o, [&](const std::string& l) { printed.add(l); }, [](const std::string&) {});
  for (const auto& step : run.steps) worker.submit(batch_of(step));
  ASSERT_TRUE(worker.finish(std::chrono::seconds(60)));
  const auto behind = [&] {
    std::vector<std::string> out;
    for (const auto& l : printed.starting("straggler_probe step=")) {
      if (l.find("fell behind") != std::string::npos) out.push_back(l);
    }
    return out;
  }();
  ASSERT_FALSE(behind.empty());
  const uint64_t dropped = worker.counters().steps_skipped_behind.load();
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(worker.counters().steps_analyzed.load() + dropped, 12u);
  EXPECT_NE(behind[0].find(" skipped reason=\"behind: rank-0 analysis fell behind: "), std::string::npos) << behind[0];
}

// A user who sees a busy thread in their training process (top -H, perf, gdb) must be able to
// tell it is the probe's: the analysis thread carries its name.
TEST(AnalysisWorker, ItsThreadIsNamedSoThatUsersCanTellItFromTheTrainingsOwn) {
  AnalysisOptions o;
  o.settings.world_size = 4;
  o.settings.recap_interval = 0;
  AnalysisWorker worker(o, [](const std::string&) {}, [](const std::string&) {});
  auto names = [] {
    std::vector<std::string> out;
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      out.push_back(name);
    }
    return out;
  };
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {  // the thread names itself as it starts
    const auto now = names();
    seen = std::find(now.begin(), now.end(), "sp_analysis") != now.end();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(seen) << ::testing::PrintToString(names());
  ASSERT_TRUE(worker.finish(std::chrono::seconds(30)));
}

}  // namespace
}  // namespace sp::rank_pipeline
