// The report directory: one writer, every file replaced whole, partial reports (written while
// the job runs) saying so in each file, the caller's sections and files written with them.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "output/report_writer.h"
#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("sp_report_" + name);
  fs::remove_all(dir);
  return dir;
}

// An analyzer that has analysed `steps` steps of a 4-rank DDP job.
std::unique_ptr<OnlineAnalyzer> analysed(int steps) {
  testing::SyntheticJob job;
  job.rank_speed = {1, 1, 1.3, 1};
  const testing::SyntheticRun run = testing::run_synthetic(job, steps);
  OnlineConfig cfg;
  cfg.world_size = 4;
  auto a = std::make_unique<OnlineAnalyzer>(cfg);
  for (const auto& step : run.steps) {
    for (const auto& s : step) (void)a->add(s);
  }
  return a;
}

TEST(OnlineReport, APartialReportSaysSoInEveryFileTheFinalOneReplacesIt) {
  const fs::path dir = fresh("partial");
  auto a = analysed(6);  // steps 0-5 closed except the last (in order, complete: all closed)
  ReportOptions partial;
  partial.final = false;
  ASSERT_TRUE(a->write_report(dir.string(), partial).ok);
  auto report = nlohmann::json::parse(slurp(dir / "report.json"));
  EXPECT_FALSE(report.at("run").at("complete").get<bool>());
  EXPECT_EQ(report.at("run").at("first_step").get<int>(), 0);
  EXPECT_EQ(report.at("run").at("last_step").get<int>(), 5);
  EXPECT_NE(report.at("run").at("note").get<std::string>().find("cut short"), std::string::npos);
  EXPECT_EQ(report.at("steps_analyzed").get<int>(), 6);
  const auto timeline = nlohmann::json::parse(slurp(dir / "timeline.json"));
  EXPECT_FALSE(timeline.at("otherData").at("straggler_probe_run").at("complete").get<bool>());
  EXPECT_NE(slurp(dir / "heatmap.svg").find("partial: steps 0-5, written while the job ran"), std::string::npos);

  ASSERT_TRUE(a->write_report(dir.string()).ok);  // final by default
  report = nlohmann::json::parse(slurp(dir / "report.json"));
  EXPECT_TRUE(report.at("run").at("complete").get<bool>());
  EXPECT_EQ(slurp(dir / "heatmap.svg").find("partial"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir / "timeline.json"))
                  .at("otherData").at("straggler_probe_run").at("complete").get<bool>());
  for (const auto& e : fs::directory_iterator(dir)) {  // no temporary file left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
}

TEST(OnlineReport, TheCallersSectionsAndFilesAreWrittenInTheSameReport) {
  const fs::path dir = fresh("sections");
  auto a = analysed(4);
  ReportOptions o;
  o.sections["clock"] = {{"reference", "rank 0"}};
  o.sections["capture"] = {{"gpu", {{"state", "inactive"}, {"reason", "no GPU"}}}};
  o.files.emplace_back("extra.txt", "hello\n");
  ASSERT_TRUE(a->write_report(dir.string(), o).ok);
  const auto report = nlohmann::ordered_json::parse(slurp(dir / "report.json"));
  EXPECT_EQ(report.at("clock").at("reference"), "rank 0");
  EXPECT_EQ(report.at("capture").at("gpu").at("state"), "inactive");
  // the analysis's own sections come first, the caller's after them
  std::vector<std::string> keys;
  for (const auto& [k, v] : report.items()) keys.push_back(k);
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(keys[0], "tool");
  EXPECT_EQ(keys[1], "run");
  EXPECT_EQ(keys[keys.size() - 2], "clock");
  EXPECT_EQ(keys.back(), "capture");
  EXPECT_EQ(slurp(dir / "extra.txt"), "hello\n");
}

TEST(OnlineReport, AReaderNeverSeesAHalfWrittenReport) {
  const fs::path dir = fresh("atomic");
  auto a = analysed(8);
  ReportOptions partial;
  partial.final = false;
  // Make report.json large enough that a non-atomic write would be seen half done.
  partial.sections["padding"] = std::vector<double>(20000, 1.5);
  ASSERT_TRUE(a->write_report(dir.string(), partial).ok);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, torn{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (const char* name : {"report.json", "timeline.json"}) {
        const std::string text = slurp(dir / name);
        if (!nlohmann::json::accept(text)) ++torn;
        ++reads;
      }
    }
  });
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->write_report(dir.string(), partial).ok);
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 10);
  EXPECT_EQ(torn.load(), 0);
}

TEST(OnlineReport, AFileIsReplacedThroughATemporaryNameAndAFailureLeavesTheOldOne) {
  const fs::path dir = fresh("replace");
  fs::create_directories(dir);
  const std::string path = (dir / "f.json").string();
  ASSERT_EQ(write_file_atomically(path, "{\"v\":1}\n"), "");
  ASSERT_EQ(write_file_atomically(path, "{\"v\":2}\n"), "");
  EXPECT_EQ(slurp(path), "{\"v\":2}\n");
  // a directory in the way of the rename: an error naming the file, the old content intact
  fs::create_directories(dir / "g.json" / "inside");
  const std::string err = write_file_atomically((dir / "g.json").string(), "x");
  EXPECT_NE(err.find("g.json"), std::string::npos) << err;
  size_t entries = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++entries;
  EXPECT_EQ(entries, 2u);  // f.json and the g.json directory: no temporary file left
}

}  // namespace
}  // namespace sp::online
