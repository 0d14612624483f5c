// AnalysisDriver, shared by the live analysis thread and analyze-dir: a job in which the probe sees
// nothing useful says so in one warning within the first steps, and report.json's "health" says
// why (every skip counted and classified by its reason) instead of zeros; a healthy job warns
// nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/run_health.h"
#include "straggler_probe/online/analysis_driver.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

namespace fs = std::filesystem;

struct HostRun {
  std::vector<std::string> lines, warnings;
  nlohmann::json report;
  size_t warnings_after_5_steps = 0;
};

template <typename Mutate>
HostRun host_run(int steps, Mutate mutate, const std::string& name) {
  testing::SyntheticJob job;
  testing::SyntheticRun synthetic = testing::run_synthetic(job, steps);
  mutate(synthetic);
  const fs::path dir = fs::path(::testing::TempDir()) / ("sp_host_" + name);
  fs::remove_all(dir);
  AnalysisSettings s;
  s.world_size = 4;
  s.out_dir = dir.string();
  s.recap_interval = 0;
  HostRun run;
  AnalysisDriver driver(
      s, [&](const std::string& l) { run.lines.push_back(l); },
      [&](const std::string& w) { run.warnings.push_back(w); });
  for (size_t i = 0; i < synthetic.steps.size(); ++i) {
    driver.analyze_step(synthetic.steps[i][0].step, synthetic.steps[i]);
    if (i == 4) run.warnings_after_5_steps = run.warnings.size();
  }
  driver.finish();
  EXPECT_TRUE(driver.write_report({}).ok);
  std::ifstream in(dir / "report.json");
  run.report = nlohmann::json::parse(in);
  return run;
}

TEST(AnalysisDriver, EveryStepMalformedIsOneWarningWithinTheFirstStepsAndClassifiedInTheReport) {
  // As when three ranks all ran as "rank 0": every collective has only its own member.
  const HostRun run = host_run(12, [](testing::SyntheticRun& r) {
    for (auto& step : r.steps) {
      for (size_t rank = 1; rank < step.size(); ++rank) {
        for (auto& op : step[rank].ops) {
          if (op.kind == SP_OP_COLLECTIVE) op.seq += 1000 * rank;
        }
      }
    }
  }, "malformed");
  ASSERT_EQ(run.warnings.size(), 1u) << ::testing::PrintToString(run.warnings);
  EXPECT_EQ(run.warnings_after_5_steps, 1u);  // said within the first steps, not at the end
  EXPECT_NE(run.warnings[0].find("sees nothing useful"), std::string::npos) << run.warnings[0];
  EXPECT_NE(run.warnings[0].find("none of the 5 steps could be analysed: 5 x \"malformed: collective"),
            std::string::npos)
      << run.warnings[0];

  const auto& health = run.report.at("health");
  EXPECT_FALSE(health.at("useful").get<bool>());
  EXPECT_EQ(health.at("steps_analyzed").get<int>(), 0);
  EXPECT_EQ(health.at("skipped").at("total").get<int>(), 12);
  EXPECT_EQ(health.at("skipped").at("by_kind").at("malformed").get<int>(), 12);
  const auto& classes = health.at("skipped").at("by_reason");
  ASSERT_EQ(classes.size(), 1u) << classes.dump();  // twelve skips, one message shape
  EXPECT_EQ(classes[0].at("count").get<int>(), 12);
  EXPECT_NE(classes[0].at("reason").get<std::string>().find("has N of N members"), std::string::npos)
      << classes[0].dump();
  EXPECT_EQ(classes[0].at("first_step").get<int>(), 0);
  // and the analysis's own counters agree: not the zeros of before
  EXPECT_EQ(run.report.at("stats").at("steps_skipped").get<int>(), 12);
  EXPECT_EQ(run.report.at("stats").at("skip_reasons").at("malformed").get<int>(), 12);
}

TEST(AnalysisDriver, NoCollectiveSeenInAMultiRankJobIsOneWarning) {
  const HostRun run = host_run(10, [](testing::SyntheticRun& r) {
    for (auto& step : r.steps) {
      for (auto& s : step) {
        std::erase_if(s.ops, [](const runtime::OpRecord& op) { return op.kind == SP_OP_COLLECTIVE; });
      }
    }
  }, "nocomm");
  ASSERT_EQ(run.warnings.size(), 1u) << ::testing::PrintToString(run.warnings);
  EXPECT_EQ(run.warnings_after_5_steps, 1u);
  EXPECT_NE(run.warnings[0].find("no collective or point-to-point operation was seen"), std::string::npos)
      << run.warnings[0];
  EXPECT_FALSE(run.report.at("health").at("useful").get<bool>());
  EXPECT_EQ(run.report.at("health").at("steps_with_communication").get<int>(), 0);
}

TEST(AnalysisDriver, AHealthyJobWarnsNothingAndItsReportSaysUseful) {
  const HostRun run = host_run(10, [](testing::SyntheticRun&) {}, "healthy");
  EXPECT_TRUE(run.warnings.empty()) << ::testing::PrintToString(run.warnings);
  const auto& health = run.report.at("health");
  EXPECT_TRUE(health.at("useful").get<bool>());
  EXPECT_EQ(health.at("steps_analyzed").get<int>(), 10);
  EXPECT_EQ(health.at("steps_with_communication").get<int>(), 10);
  EXPECT_TRUE(health.at("problems").empty());
  // the report line names the files; the last line says what the run lost (the ledger)
  ASSERT_GE(run.lines.size(), 2u);
  EXPECT_EQ(run.lines[run.lines.size() - 2].rfind("straggler_probe report: ", 0), 0u) << run.lines.back();
  EXPECT_EQ(run.lines.back().rfind("straggler_probe lost ", 0), 0u) << run.lines.back();
}

TEST(AnalysisDriver, StepsDroppedForFallingBehindDoNotMakeAJobLookUseless) {
  testing::SyntheticJob job;
  const testing::SyntheticRun synthetic = testing::run_synthetic(job, 3);
  AnalysisSettings s;
  s.world_size = 4;
  std::vector<std::string> warnings;
  AnalysisDriver driver(s, [](const std::string&) {}, [&](const std::string& w) { warnings.push_back(w); });
  driver.skip_steps(0, 9, "behind", "rank-0 analysis fell behind: 10 whole steps skipped");
  for (const auto& step : synthetic.steps) driver.analyze_step(step[0].step + 10, [&] {
      auto copy = step;
      for (auto& x : copy) x.step += 10;
      return copy;
    }());
  driver.finish();
  EXPECT_TRUE(warnings.empty()) << ::testing::PrintToString(warnings);
}

TEST(AnalysisDriver, ReasonClassesFoldNumbers) {
  EXPECT_EQ(RunHealth::reason_class("malformed: collective (group 12 seq 7) has 1 of 4 members"),
            "malformed: collective (group N seq N) has N of N members");
}

}  // namespace
}  // namespace sp::online
