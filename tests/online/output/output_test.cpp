// Outputs: the per-step log line (exact format), the periodic summary with its heatmap, the
// JSONL file and the end-of-run report files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"
#include "output/verdict_json.h"

namespace sp::online {
namespace {

TEST(OnlineOutput, LogLineFormat) {
  StepVerdict v;
  v.step = 120;
  v.analyzed = true;
  v.time_s = 2.2134;
  v.ideal_s = 1.8431;
  v.S = 1.2009;
  v.cause = Cause::kStageImbalance;
  v.worst = Culprit::stage(3);
  v.worst_S = 1.234;
  v.top_op = "forward-compute";
  v.launch_share = 0.0123;
  v.evidence = "fixing stage 3 recovers 80% (M_S=0.80)";
  EXPECT_EQ(format_log_line(v),
            "straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=stage-imbalance "
            "worst=stage:3 S_w=1.23 top_op=forward-compute cpu_gaps=1.2% "
            "evidence=\"fixing stage 3 recovers 80% (M_S=0.80)\"");
  v.cause = Cause::kNone;
  v.worst = {};
  v.evidence = "say \"hi\"";
  EXPECT_EQ(format_log_line(v),
            "straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=none worst=- "
            "S_w=1.23 top_op=forward-compute cpu_gaps=1.2% evidence=\"say \\\"hi\\\"\"");
  // Against the noise model: the part of S - 1 that jitter explains and the verdict's p-value.
  v.null_ready = true;
  v.jitter = 0.031;
  v.p = 0.42;
  EXPECT_EQ(format_log_line(v),
            "straggler_probe step=120 time=2.213s ideal=1.843s S=1.20 cause=none worst=- "
            "S_w=1.23 top_op=forward-compute cpu_gaps=1.2% jitter=3.1% p=0.42 evidence=\"say \\\"hi\\\"\"");
  StepVerdict s;
  s.step = 7;
  s.skip_reason = "incomplete: no summary from rank(s) 3";
  EXPECT_EQ(format_log_line(s),
            "straggler_probe step=7 skipped reason=\"incomplete: no summary from rank(s) 3\"");
}

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("sp_online_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(OnlineOutput, JsonlRecordWritesNonFiniteNumbersAsNull) {
  StepVerdict v;
  v.step = 5;
  v.analyzed = true;
  v.S = std::numeric_limits<double>::quiet_NaN();
  v.fidelity_err = std::numeric_limits<double>::infinity();
  v.worker_S = {1.0, -std::numeric_limits<double>::infinity()};
  v.op_S = {{"all-reduce", std::numeric_limits<double>::quiet_NaN()}, {"gc", 1.5}};
  const auto j = nlohmann::json::parse(verdict_to_json(v).dump());
  EXPECT_TRUE(j.at("S").is_null());
  EXPECT_TRUE(j.at("fidelity_err").is_null());
  EXPECT_EQ(j.at("worker_S").dump(), "[1.0,null]");
  EXPECT_EQ(j.at("op_S").dump(), R"({"all-reduce":null,"gc":1.5})");
  EXPECT_EQ(j.at("time_s").get<double>(), 0.0);
}

// A big job's step record carries its largest per-rank scores, not all of them: its size does
// not grow with the job (the layout is a record of its own).
TEST(OnlineOutput, JsonlStepRecordOfABigJobKeepsTheLargestScores) {
  StepVerdict v;
  v.analyzed = true;
  v.rank_dp.assign(4096, 0);
  v.rank_stage.assign(4096, 0);
  v.worker_S.assign(4096, 1.0);
  v.worker_S[77] = 1.5;
  v.worker_S[3000] = 1.2;
  v.worker_S[5] = std::numeric_limits<double>::quiet_NaN();
  v.dp_S = {1.1, 1.0};
  const auto j = nlohmann::json::parse(verdict_to_json(v).dump());
  EXPECT_FALSE(j.contains("worker_S"));
  EXPECT_FALSE(j.contains("rank_dp"));
  ASSERT_EQ(j.at("worker_S_top").size(), kTopRanks);
  EXPECT_EQ(j.at("worker_S_top")[0].dump(), "[77,1.5]");
  EXPECT_EQ(j.at("worker_S_top")[1].dump(), "[3000,1.2]");
  for (const auto& pair : j.at("worker_S_top")) EXPECT_FALSE(pair[1].is_null()) << pair;
  EXPECT_EQ(j.at("worker_S_median").get<double>(), 1.0);
  EXPECT_EQ(j.at("dp_S").dump(), "[1.1,1.0]");
  EXPECT_LT(j.dump().size(), 2000u);
  const auto layout = layout_to_json(v);
  EXPECT_EQ(layout.at("world"), 4096);
  EXPECT_FALSE(layout_changed(layout, v));
  v.rank_stage[4095] = 1;
  EXPECT_TRUE(layout_changed(layout, v));
  EXPECT_TRUE(layout_changed(nlohmann::ordered_json(), v));
}

TEST(OnlineOutput, LinesSummaryJsonlAndReport) {
  testing::SyntheticJob job;
  job.dp = 2;
  job.pp = 2;
  job.microbatches = 2;
  job.rank_speed = {1, 1, 1, 1.3};
  const testing::SyntheticRun run = testing::run_synthetic(job, 12);
  const std::string dir = temp_dir("outputs");
  std::vector<std::string> lines;
  OnlineConfig cfg;
  cfg.world_size = 4;
  cfg.output_dir = dir;
  cfg.recap_interval = 5;
  cfg.log_sink = [&lines](const std::string& l) { lines.push_back(l); };
  OnlineAnalyzer a(cfg);
  for (const auto& step : run.steps) {
    for (const auto& s : step) (void)a.add(s);
  }
  (void)a.finish();

  // 12 step lines + 2 summaries + the slow rank's alarm (raised once, never cleared), in order.
  ASSERT_EQ(lines.size(), 15u);
  const std::regex line_re(
      R"(straggler_probe step=\d+ time=\d+\.\d{3}s ideal=\d+\.\d{3}s S=\d+\.\d{2} cause=[a-z-]+ )"
      R"(worst=((rank|stage):\d+|-) S_w=\d+\.\d{2} top_op=[a-z-]+ cpu_gaps=\d+\.\d% jitter=\d+\.\d% p=\S+ )"
      R"(evidence=".*")");
  const std::regex alarm_re(
      R"(straggler_probe alarm raised: rank:3 cause=worker since step \d+ \(\d+ of the last \d+ steps, )"
      R"(S_w=\d+\.\d{2}, p(<1e-6|=\S+)\))");
  int summaries = 0, alarms = 0;
  for (const std::string& l : lines) {
    if (l.rfind("straggler_probe alarm", 0) == 0) {
      ++alarms;
      EXPECT_TRUE(std::regex_match(l, alarm_re)) << l;
    } else if (l.rfind("straggler_probe recap", 0) == 0) {
      ++summaries;
      EXPECT_NE(l.find("stage0"), std::string::npos) << l;
      EXPECT_NE(l.find("stage1"), std::string::npos) << l;
      EXPECT_NE(l.find("dp1"), std::string::npos) << l;
      // The slow worker (stage 1, dp 1) is the starred cell: last cell of the last row.
      EXPECT_EQ(l.substr(l.size() - 2), "*\n") << l;
    } else {
      EXPECT_TRUE(std::regex_match(l, line_re)) << l;
    }
  }
  EXPECT_EQ(summaries, 2);
  EXPECT_EQ(alarms, 1);
  EXPECT_EQ(a.recap_text().rfind("straggler_probe recap", 0), 0u);

  std::ifstream jsonl(std::filesystem::path(dir) / "straggler_probe_steps.jsonl");
  std::string row;
  int rows = 0, alarm_rows = 0, layout_rows = 0;
  while (std::getline(jsonl, row)) {
    const auto j = nlohmann::json::parse(row);
    if (j.at("event") == "layout") {  // once, before the first step: the layout never changed
      EXPECT_EQ(rows, 0);
      EXPECT_EQ(j.at("rank_stage").dump(), "[0,0,1,1]");
      EXPECT_EQ(j.at("rank_dp").dump(), "[0,1,0,1]");
      ++layout_rows;
      continue;
    }
    if (j.at("event") == "alarm") {
      ++alarm_rows;
      EXPECT_EQ(j.at("state"), "raised");
      EXPECT_EQ(j.at("target"), "rank:3");
      EXPECT_EQ(j.at("cause"), "worker");
      continue;
    }
    EXPECT_EQ(j.at("event"), "step");
    EXPECT_EQ(j.at("step").get<int>(), rows);
    // The slow rank, named on every step but the first two: the first has no dispersion of the
    // job's own to calibrate the null to, and with two dp ranks per stage (each the other's only
    // reference) the second alone is not significant either; the window's median test says it
    // from the third.
    if (rows > 1) {
      EXPECT_LT(j.at("p").get<double>(), 1e-3) << row;
    }
    EXPECT_GE(j.at("jitter").get<double>(), 0.0);
    EXPECT_TRUE(j.at("analyzed").get<bool>());
    EXPECT_EQ(j.at("worker_S").size(), 4u);
    EXPECT_TRUE(j.at("op_S").contains("forward-compute"));
    ++rows;
  }
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(alarm_rows, 1);
  EXPECT_EQ(layout_rows, 1);

  const std::string report_dir = dir + "/report";
  const Status st = a.write_report(report_dir);
  ASSERT_TRUE(st.ok) << st.message;
  std::ifstream rf(report_dir + "/report.json");
  const auto report = nlohmann::json::parse(rf);
  EXPECT_EQ(report.at("steps_analyzed").get<int>(), 12);
  ASSERT_EQ(report.at("alarms").size(), 1u);
  const auto& alarm = report.at("alarms").at(0);
  EXPECT_EQ(alarm.at("target"), "rank:3");
  EXPECT_EQ(alarm.at("cause"), "worker");
  EXPECT_TRUE(alarm.at("cleared_step").is_null());
  EXPECT_LE(alarm.at("raised_step").get<int>(), 10);
  EXPECT_EQ(report.at("mean_worker_S").at("rows_by_stage").size(), 2u);
  EXPECT_EQ(report.at("stats").at("steps_skipped").get<int>(), 0);
  std::ifstream tf(report_dir + "/timeline.json");
  const auto timeline = nlohmann::json::parse(tf);
  size_t slices = 0;
  for (const auto& e : timeline.at("traceEvents")) slices += e.at("ph") == "X";
  EXPECT_GT(slices, 0u);
  std::ifstream hf(report_dir + "/heatmap.svg");
  std::stringstream svg;
  svg << hf.rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
}

TEST(OnlineOutput, ReportToAnUnwritablePlaceIsAnErrorStatus) {
  OnlineConfig cfg;
  cfg.world_size = 1;
  OnlineAnalyzer a(cfg);
  const Status st = a.write_report("/proc/definitely/not/here");
  EXPECT_FALSE(st.ok);
  EXPECT_FALSE(st.message.empty());
}

// The culprit's spelling both ways: what the line and JSONL write is what readers get back, and
// anything else is refused rather than guessed (a sign, spaces, another prefix, an overflow).
TEST(OnlineCulprit, SpelledAndReadBackStrictly) {
  EXPECT_EQ(Culprit::rank(12).text(), "rank:12");
  EXPECT_EQ(Culprit::stage(0).text(), "stage:0");
  EXPECT_EQ(Culprit{}.text(), "");
  EXPECT_TRUE(Culprit::rank(-1).empty());
  EXPECT_EQ(Culprit::parse("rank:12"), Culprit::rank(12));
  EXPECT_EQ(Culprit::parse("stage:3"), Culprit::stage(3));
  EXPECT_EQ(Culprit::parse(""), Culprit{});
  for (const char* bad : {"rank:", "rank:-1", "rank: 1", "rank:1x", "rank:99999999999", "host:a", "stage",
                          "Rank:1"}) {
    EXPECT_FALSE(Culprit::parse(bad).has_value()) << bad;
  }
  EXPECT_EQ(Culprit::rank(2).rank_index(), 2);
  EXPECT_EQ(Culprit::rank(2).stage_index(), -1);
  EXPECT_EQ(Culprit::stage(2).rank_index(), -1);
  EXPECT_NE(Culprit::rank(2), Culprit::stage(2));
}

}  // namespace
}  // namespace sp::online
