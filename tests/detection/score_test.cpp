// The detection benchmark's scorer and cell files: hand-made truth and verdicts with known
// answers, the alarms it reads from report.json (and "n/a" without them), and the matrix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cell_io.h"
#include "matrix.h"
#include "score.h"
#include "tables.h"

namespace sp::bench::detection {
namespace {

namespace fs = std::filesystem;

TruthStep fault(int64_t step, const std::string& cause, std::vector<std::string> targets, double m) {
  return {step, {{cause, std::move(targets)}}, false, m};
}
TruthStep clean(int64_t step) { return {step, {}, false, 1.0}; }
VerdictStep said(int64_t step, const std::string& cause, const std::string& worst, double S) {
  return {step, true, cause, worst, S};
}

CellInfo info_with(std::vector<CellFault> faults, int steps = 10, int warmup = 2) {
  CellInfo c;
  c.name = "t";
  c.steps = steps;
  c.warmup = warmup;
  c.faults = std::move(faults);
  return c;
}

TEST(DetectionScore, PrecisionRecallFalseFlagsAndSError) {
  const std::vector<TruthStep> truth = {
      clean(0),                                   // warm-up: not scored even though flagged
      clean(1),
      clean(2),
      clean(3),                                   // false flag (worker rank:1)
      fault(4, "worker", {"rank:2"}, 1.10),       // right
      fault(5, "worker", {"rank:2"}, 1.10),       // right cause, wrong rank
      fault(6, "worker", {"rank:2"}, 1.10),       // missed (none)
      fault(7, "comm", {}, 1.20),                 // right cause, no identifiable target
      {8, {}, true, 1.005},                       // marginal: left out
  };
  CellOutputs out;
  out.verdicts = {said(0, "worker", "rank:1", 1.2), said(1, "none", "", 1.01),
                  said(2, "none", "", 1.03),      said(3, "worker", "rank:1", 1.06),
                  said(4, "worker", "rank:2", 1.21), said(5, "worker", "rank:3", 1.10),
                  said(6, "none", "", 1.0),       said(7, "comm", "rank:0", 1.20),
                  said(8, "gc", "rank:0", 1.3)};
  const std::vector<VerdictStep> twin = {said(4, "none", "", 1.1), said(5, "none", "", 1.0)};
  const CellScore s = score_cell(info_with({}), truth, out, &twin);
  EXPECT_EQ(s.clean_steps, 2);
  EXPECT_EQ(s.fault_steps, 4);
  EXPECT_EQ(s.marginal, 1);
  EXPECT_EQ(s.false_flags.hit, 1);
  EXPECT_EQ(s.false_flags.of, 2);
  EXPECT_EQ(s.cause_recall.hit, 3);  // 4, 5, 7
  EXPECT_EQ(s.cause_recall.of, 4);
  EXPECT_EQ(s.cause_precision.hit, 3);  // of 3, 4, 5, 7
  EXPECT_EQ(s.cause_precision.of, 4);
  EXPECT_EQ(s.target_recall.hit, 1);  // 4 of 4, 5, 6 (7 has no identifiable target)
  EXPECT_EQ(s.target_recall.of, 3);
  EXPECT_EQ(s.target_precision.hit, 1);  // of 3, 4, 5
  EXPECT_EQ(s.target_precision.of, 3);
  // |S - m| / m over 4..7: 0.11/1.1, 0, 0.1/1.1, 0
  EXPECT_NEAR(*s.S_error.value(), (0.11 / 1.1 + 0.1 / 1.1) / 4, 1e-12);
  // S / S0 on the twin's steps 4 and 5: 1.1 and 1.1 against 1.1
  EXPECT_NEAR(*s.S_twin_error.value(), 0.0, 1e-12);
  EXPECT_NEAR(*s.S_clean.value(), (1.03 + 1.06) / 2, 1e-12);
  EXPECT_EQ((s.confusion.at({"none", "worker"})), 1);
  EXPECT_EQ((s.confusion.at({"worker", "none"})), 1);
  EXPECT_EQ(s.confusion.count({"comm", "gc"}), 0u);
}

TEST(DetectionScore, AStepWithoutAnAnalysedVerdictNamesNobody) {
  CellOutputs out;
  out.verdicts = {{3, false, "none", "", 1.0}};
  const CellScore s = score_cell(info_with({}, 5, 0), {fault(3, "gc", {"rank:1"}, 1.3), clean(4)}, out, nullptr);
  EXPECT_EQ(s.unanalyzed, 2);
  EXPECT_EQ(s.cause_recall.hit, 0);
  EXPECT_EQ(s.cause_recall.of, 1);
  EXPECT_EQ(s.false_flags.hit, 0);
  EXPECT_FALSE(s.S_error.value());
}

TEST(DetectionScore, AlarmsAreTrueOnlyForAPlantedCulpritAfterItsOnset) {
  const CellFault worker{{"worker", {"rank:2"}}, 10, 1};
  const CellFault seq{{"seq-imbalance", {}}, 10, 1};
  EXPECT_TRUE(alarm_matches({"rank:2", "worker", 14, {}}, worker));
  EXPECT_FALSE(alarm_matches({"rank:3", "worker", 14, {}}, worker));
  EXPECT_FALSE(alarm_matches({"rank:2", "gc", 14, {}}, worker));
  EXPECT_FALSE(alarm_matches({"rank:2", "worker", 9, {}}, worker));  // before the fault
  EXPECT_TRUE(alarm_matches({"rank:7", "seq-imbalance", 12, {}}, seq));

  CellOutputs out;
  EXPECT_FALSE(score_cell(info_with({worker}, 100), {}, out, nullptr).alarms_reported);
  EXPECT_EQ(table_legend().find("n/a") != std::string::npos, true);
  out.alarms_reported = true;
  out.alarms = {{"rank:2", "worker", 16, 40}, {"rank:2", "worker", 50, {}}, {"rank:5", "comm", 3, 4}};
  const CellScore s = score_cell(info_with({worker}, 100), {}, out, nullptr);
  ASSERT_EQ(s.steps_to_alarm.size(), 1u);
  EXPECT_EQ(*s.steps_to_alarm[0], 7);  // raised on the fault's 7th step
  EXPECT_EQ(s.false_alarms, 1);
  const std::string table = score_table({s});
  EXPECT_NE(table.find("| 10.0 | 7 |"), std::string::npos) << table;  // 1 per 100 steps
}

class CellFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sp_detection_cell_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(CellFiles, RoundTripAndTheAnalyzersOutputsAsAUserReadsThem) {
  CellInfo info = info_with({{{"gc", {"rank:1"}}, 3, 4}});
  info.twin = "../clean";
  write_cell(dir_.string(), info, {fault(3, "gc", {"rank:1"}, 1.25), {4, {}, true, 1.001}});
  const CellInfo back = read_cell_info(dir_.string());
  EXPECT_EQ(back.faults.at(0).culprit.targets, std::vector<std::string>{"rank:1"});
  EXPECT_EQ(back.faults.at(0).every, 4);
  EXPECT_EQ(back.twin, "../clean");
  const auto truth = read_truth(dir_.string());
  ASSERT_EQ(truth.size(), 2u);
  EXPECT_EQ(truth[0].cause(), "gc");
  EXPECT_DOUBLE_EQ(truth[0].measured_slowdown, 1.25);
  EXPECT_TRUE(truth[1].marginal);

  write(back.verdicts,
        "{\"step\":3,\"analyzed\":true,\"S\":1.2,\"cause\":\"gc\",\"worst\":\"rank:1\"}\n"
        "{\"event\":\"alarm\",\"state\":\"raised\",\"step\":3}\n"
        "{\"rank_table\":[{\"rank\":0,\"host\":\"h\"}]}\n"
        "{\"event\":\"step\",\"step\":4,\"analyzed\":false,\"skip_reason\":\"incomplete\"}\n");
  CellOutputs out = read_outputs(dir_.string(), back);
  ASSERT_EQ(out.verdicts.size(), 2u);
  EXPECT_EQ(out.verdicts[0].worst, "rank:1");
  EXPECT_FALSE(out.verdicts[1].analyzed);  // a step record may say "event": "step"
  EXPECT_FALSE(out.alarms_reported);  // no report.json

  write(back.report, "{\"steps\": 5}");
  EXPECT_FALSE(read_outputs(dir_.string(), back).alarms_reported);  // a report without alarms
  write(back.report, "{\"alarms\": [{\"target\": \"rank:1\", \"cause\": \"gc\", \"raised_step\": 7, "
                     "\"cleared_step\": null}]}");
  out = read_outputs(dir_.string(), back);
  ASSERT_TRUE(out.alarms_reported);
  EXPECT_EQ(out.alarms.at(0).raised_step, 7);
  EXPECT_FALSE(out.alarms.at(0).cleared_step);

  write(back.report, "{\"alarms\": [{\"target\": \"rank:1\"}]}");
  EXPECT_THROW(read_outputs(dir_.string(), back), std::runtime_error);
  write(back.verdicts, "{\"step\":3,\n");
  try {
    read_outputs(dir_.string(), back);
    FAIL() << "a broken verdict line was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("straggler_probe_steps.jsonl:1"), std::string::npos) << e.what();
  }
}

TEST(DetectionMatrix, CellsTwinsAndCulprits) {
  MatrixOptions o;
  o.sizes = {4, 64};
  o.steps = {30, 20};
  const auto cells = build_matrix(o);
  int pipeline_only = 0;
  for (const Cell& c : cells) {
    EXPECT_EQ(c.job.steps, c.ranks == 4 ? 30 : 20) << c.name;
    if (c.scenario == "heavy-last-stage") {
      ++pipeline_only;
      EXPECT_GT(c.job.job.pp, 1);
    }
    if (c.scenario.rfind("clean", 0) == 0) {
      EXPECT_TRUE(c.job.faults.empty());
      EXPECT_TRUE(c.twin.empty());
      continue;
    }
    EXPECT_EQ(c.twin, c.shape + "/clean-j3") << c.name;
    for (const auto& f : c.job.faults) EXPECT_EQ(f.onset, o.onset);
  }
  EXPECT_EQ(pipeline_only, 2);  // dp2xpp2 and dp16xpp4
  EXPECT_EQ(cells.size(), 2u * 2u * (3u + scenario_names().size()) - 2u);
  o.scenarios = {"slow-7"};
  EXPECT_THROW(build_matrix(o), std::invalid_argument);
  o.scenarios = {};
  o.full = true;
  for (const Cell& c : build_matrix(o)) {
    EXPECT_TRUE(c.job.faults.empty());
    EXPECT_EQ(c.job.steps, 1000);
  }
}

}  // namespace
}  // namespace sp::bench::detection
