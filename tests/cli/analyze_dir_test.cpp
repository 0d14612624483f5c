// `straggler-probe analyze-dir` through the real binary, on per-rank .spsum files written here
// with the summary codec from synthetic jobs (tests/online/synthetic_job.h):
//   - a planted slow rank is named, the lines are exactly those a live rank 0 prints for the
//     same summaries, and the live path's report files are written;
//   - a step missing a rank is skipped with one warning, never silently;
//   - every malformed directory gives exit code 2 and one stderr line naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/step_summary.h"
#include "synthetic_job.h"

namespace {

namespace fs = std::filesystem;
using sp::cli::testing::CliRun;
using sp::cli::testing::run_cli;
using sp::cli::testing::slurp;
using sp::online::testing::run_synthetic;
using sp::online::testing::SyntheticJob;
using sp::online::testing::SyntheticRun;
using sp::runtime::StepSummary;

// One record of a .spsum file: [uint32 LE length][encoded summary].
std::string record(const StepSummary& s) {
  const std::string bytes = sp::runtime::encode_summary(s);
  const auto n = static_cast<uint32_t>(bytes.size());
  std::string out{static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                  static_cast<char>(n >> 24)};
  return out + bytes;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string records(const std::vector<StepSummary>& summaries) {
  std::string out;
  for (const auto& s : summaries) out += record(s);
  return out;
}

// rank<r>.spsum for every rank of `run`, leaving out the summaries `skip(step index, rank)` names.
void write_rank_files(const fs::path& dir, const SyntheticRun& run,
                      const std::function<bool(size_t, size_t)>& skip = nullptr) {
  fs::create_directories(dir);
  for (size_t r = 0; r < run.steps.at(0).size(); ++r) {
    std::string bytes;
    for (size_t i = 0; i < run.steps.size(); ++i) {
      if (!skip || !skip(i, r)) bytes += record(run.steps[i][r]);
    }
    write_file(dir / ("rank" + std::to_string(r) + ".spsum"), bytes);
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> step_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(text)) {
    if (line.rfind("straggler_probe step=", 0) == 0) out.push_back(line);
  }
  return out;
}

class AnalyzeDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("sp_analyze_dir_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(AnalyzeDir, NamesAPlantedSlowRankAsALiveRankZeroWouldAndWritesTheReport) {
  SyntheticJob job;
  job.jitter = 0.01;
  job.microbatches = 2;
  job.rank_speed = {1.0, 1.0, 1.3, 1.0};
  const SyntheticRun run = run_synthetic(job, 30);
  const int64_t gap_step = run.steps[7][3].step;
  write_rank_files(root_ / "d", run, [](size_t i, size_t r) { return i == 7 && r == 3; });

  const CliRun r = run_cli("analyze-dir d", root_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The incomplete step: one warning with the count, the step and the missing rank.
  EXPECT_EQ(r.err, "straggler-probe: warning: 1 step(s) skipped, not analysed: not every rank has a summary of them "
                   "(steps " + std::to_string(gap_step) + "; step " + std::to_string(gap_step) +
                   " lacks rank(s) 3)\n");

  // Live: rank 0's analyzer fed each complete step's summaries, in rank order, oldest first.
  sp::online::OnlineConfig cfg;
  cfg.world_size = 4;
  std::vector<std::string> live;
  // Step lines only: the alarm lines between them are checked below.
  cfg.log_sink = [&](const std::string& line) {
    if (line.rfind("straggler_probe step=", 0) == 0) live.push_back(line);
  };
  sp::online::OnlineAnalyzer analyzer(cfg);
  for (size_t i = 0; i < run.steps.size(); ++i) {
    if (i == 7) continue;
    for (const auto& s : run.steps[i]) analyzer.add(s);
  }
  analyzer.finish();
  ASSERT_EQ(live.size(), run.steps.size() - 1);
  EXPECT_EQ(step_lines(r.out), live);

  int named = 0;
  const auto lines = step_lines(r.out);
  for (size_t i = 3; i < lines.size(); ++i) named += lines[i].find(" worst=rank:2 ") != std::string::npos;
  EXPECT_GE(named, static_cast<int>(0.9 * static_cast<double>(lines.size() - 3))) << r.out;
  for (const auto& line : lines) {
    EXPECT_EQ(line.find("step=" + std::to_string(gap_step) + " "), std::string::npos) << line;
  }

  // The closing summary and the report line; the files of the live path, under DIR/report.
  EXPECT_NE(r.out.find("straggler_probe recap steps="), std::string::npos) << r.out;
  const auto all = lines_of(r.out);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[all.size() - 2], "straggler_probe report: d/report/report.json d/report/report.html d/report/timeline.json "
                                 "d/report/heatmap.svg "
                                 "d/report/straggler_probe_steps.jsonl");
  // The last line: the ledger (what the run lost, the slow rank's share; no rank table: no host).
  EXPECT_EQ(all.back().rfind("straggler_probe lost ", 0), 0u) << all.back();
  EXPECT_NE(all.back().find(" worker on rank 2"), std::string::npos) << all.back();
  const fs::path out = root_ / "d" / "report";
  const auto report = nlohmann::json::parse(slurp(out / "report.json"));
  EXPECT_EQ(report.at("steps_analyzed").get<int>(), 29);
  EXPECT_NE(report.at("worst").dump().find("rank:2"), std::string::npos) << report.dump();
  EXPECT_TRUE(nlohmann::json::parse(slurp(out / "timeline.json")).contains("traceEvents"));
  EXPECT_NE(slurp(out / "heatmap.svg").find("<svg"), std::string::npos);
  EXPECT_NE(slurp(out / "report.html").find("id=\"sp-data\""), std::string::npos);  // drawn: tests/python/test_html_report.py
  EXPECT_GT(report.at("lost").at("lost_gpu_seconds").get<double>(), 0.0);
  EXPECT_EQ(report.at("lost").at("top_ranks").at(0).at("rank").get<int>(), 2);
  EXPECT_EQ(slurp(out / "exclude_hosts.txt"), "");  // the alarm's rank has no known host
  // The slow rank's alarm (issue 10): one line, one JSONL record, one report entry.
  EXPECT_NE(r.out.find("straggler_probe alarm raised: rank:2 cause=worker"), std::string::npos) << r.out;
  ASSERT_EQ(report.at("alarms").size(), 1u) << report.dump();
  // 29 steps, the alarm and the layout (one record before the first step: it never changed).
  const auto jsonl = lines_of(slurp(out / "straggler_probe_steps.jsonl"));
  ASSERT_EQ(jsonl.size(), 31u);
  int step_records = 0, layout_records = 0;
  for (const auto& line : jsonl) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("event") == "layout") {
      ++layout_records;
      continue;
    }
    step_records += j.at("event") == "step";
    EXPECT_NE(j.at("step").get<int64_t>(), gap_step);
    if (j.at("event") == "step") {
      EXPECT_TRUE(j.contains("lost")) << line;  // the ledger's entry
    }
  }
  EXPECT_EQ(step_records, 29);
  EXPECT_EQ(layout_records, 1);
}

TEST_F(AnalyzeDir, ThresholdAndWindowAreTheLiveSettings) {
  SyntheticJob job;
  job.jitter = 0.01;
  job.microbatches = 2;
  job.rank_speed = {1.0, 1.0, 1.3, 1.0};
  const SyntheticRun run = run_synthetic(job, 12);
  write_rank_files(root_ / "d", run, [](size_t, size_t) { return false; });

  // A 30% slow rank is named at the default threshold and not above its S.
  const CliRun named = run_cli("analyze-dir d --window 4 --recap-interval 0", root_);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find(" worst=rank:2 "), std::string::npos) << named.out;
  const CliRun quiet = run_cli("analyze-dir d --window 4 --recap-interval 0 --threshold 3", root_);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  for (const auto& line : step_lines(quiet.out)) {
    EXPECT_NE(line.find(" cause=none "), std::string::npos) << line;
  }
  // The same as a live rank 0 with those settings.
  sp::online::OnlineConfig cfg;
  cfg.world_size = 4;
  cfg.thresholds.none_below = 3;
  cfg.ideal.window_steps = 4;
  cfg.recap_interval = 0;
  std::vector<std::string> live;
  // Step lines only: the alarm lines between them are checked below.
  cfg.log_sink = [&](const std::string& line) {
    if (line.rfind("straggler_probe step=", 0) == 0) live.push_back(line);
  };
  sp::online::OnlineAnalyzer analyzer(cfg);
  for (const auto& step : run.steps) {
    for (const auto& s : step) analyzer.add(s);
  }
  analyzer.finish();
  EXPECT_EQ(step_lines(quiet.out), step_lines([&] {
              std::string all;
              for (const auto& l : live) all += l + "\n";
              return all;
            }()));
  const CliRun bad = run_cli("analyze-dir d --threshold 0.5", root_);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--threshold"), std::string::npos) << bad.err;

  // The noise model's levels, as STRAGGLER_PROBE_SIGNIFICANCE / _ALARM_SIGNIFICANCE live: the
  // report says what the analysis ran with; a level outside (0, 1) is refused, by name.
  const CliRun levels = run_cli("analyze-dir d -q --significance 0.01 --alarm-significance 0.0001", root_);
  ASSERT_EQ(levels.exit_code, 0) << levels.err;
  const auto config = nlohmann::json::parse(slurp(root_ / "d" / "report" / "report.json"))["config"];
  EXPECT_EQ(config["alpha"].get<double>(), 0.01);
  EXPECT_EQ(config["alarm_alpha"].get<double>(), 0.0001);
  const CliRun bad_level = run_cli("analyze-dir d --significance 1.5", root_);
  EXPECT_EQ(bad_level.exit_code, 2);
  EXPECT_NE(bad_level.err.find("--significance"), std::string::npos) << bad_level.err;

  // --timeline-ranks, as STRAGGLER_PROBE_TIMELINE_RANKS live: rank 0 and the named rank drawn,
  // the file says how many were left out.
  const CliRun capped = run_cli("analyze-dir d -q --timeline-ranks 2", root_);
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  const auto timeline = nlohmann::json::parse(slurp(root_ / "d" / "report" / "timeline.json"));
  std::set<int> drawn;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"].get<int>() < 4) drawn.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(drawn, (std::set<int>{0, 2}));
  EXPECT_EQ(timeline["otherData"]["straggler_probe_timeline"]["ranks_left_out"], 2);
}

TEST_F(AnalyzeDir, StepsQuietAndOutSelectWhatIsAnalysedAndARerunReplacesTheJsonl) {
  SyntheticJob job;
  job.dp = 2;
  const SyntheticRun run = run_synthetic(job, 25);
  write_rank_files(root_ / "d", run);
  const int64_t first = run.steps[10][0].step;
  const std::string range = std::to_string(first) + "-" + std::to_string(first + 9);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const CliRun r = run_cli("analyze-dir d --out o --quiet --steps " + range, root_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_TRUE(step_lines(r.out).empty()) << r.out;
    EXPECT_NE(r.out.find("straggler_probe recap steps=" + range + " analyzed=10 "), std::string::npos) << r.out;
    EXPECT_EQ(lines_of(slurp(root_ / "o" / "straggler_probe_steps.jsonl")).size(), 11u);  // 10 steps, the layout
  }
  EXPECT_FALSE(fs::exists(root_ / "d" / "report"));
}

TEST_F(AnalyzeDir, TheRecapIntervalsFormerFlagIsStillReadWithAWarning) {
  SyntheticJob job;
  job.dp = 2;
  write_rank_files(root_ / "d", run_synthetic(job, 12));
  const CliRun r = run_cli("analyze-dir d --quiet --summary-interval 4", root_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--summary-interval is now --recap-interval"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("straggler_probe recap steps="), std::string::npos) << r.out;
  // One name at a time: both together are refused rather than one silently winning.
  const CliRun both = run_cli("analyze-dir d --quiet --summary-interval 4 --recap-interval 5", root_);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
}

// --- malformed directories -------------------------------------------------------------------

// Two ranks, three steps, valid. Each case breaks it in one way and says the expected error.
struct Valid {
  SyntheticRun run;
  std::vector<std::string> files;  // per rank
  Valid() {
    SyntheticJob job;
    job.dp = 2;
    run = run_synthetic(job, 3);
    for (size_t r = 0; r < 2; ++r) {
      std::vector<StepSummary> s;
      for (const auto& step : run.steps) s.push_back(step[r]);
      files.push_back(records(s));
    }
  }
  size_t record_size(size_t step, size_t rank) const { return record(run.steps[step][rank]).size(); }
};

struct BadCase {
  const char* name;
  // Fills `dir` (which exists, empty); returns the expected message after "straggler-probe: error: ".
  std::function<std::string(const fs::path& dir, const Valid& v)> make;
  const char* extra_args = "";
};

void write_valid(const fs::path& dir, const Valid& v) {
  for (size_t r = 0; r < v.files.size(); ++r) write_file(dir / ("rank" + std::to_string(r) + ".spsum"), v.files[r]);
}

std::string end_of_rank1(const Valid& v) { return std::to_string(v.files[1].size()); }

const std::vector<BadCase> kBadCases = {
    {"EmptyDirectory", [](const fs::path&, const Valid&) {
       return std::string("d: no rank<R>.spsum files (they are written by ranks run under LD_PRELOAD with "
                          "STRAGGLER_PROBE_OUT_DIR=d)");
     }},
    {"NoSpsumFiles", [](const fs::path& d, const Valid&) {
       write_file(d / "notes.txt", "hello");
       return std::string("d: no rank<R>.spsum files (they are written by ranks run under LD_PRELOAD with "
                          "STRAGGLER_PROBE_OUT_DIR=d)");
     }},
    {"NotADirectory", [](const fs::path& d, const Valid&) {
       fs::remove(d);
       write_file(d, "x");
       return std::string("d: not a directory");
     }},
    {"BadFileName", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rankX.spsum", v.files[1]);
       return std::string("d/rankX.spsum: not a per-rank summary file name (expected rank<R>.spsum)");
     }},
    {"DuplicateRank", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank01.spsum", v.files[1]);
       return std::string("d/rank1.spsum: duplicate rank 1 (also d/rank01.spsum)");
     }},
    {"MissingRank", [](const fs::path& d, const Valid& v) {
       write_file(d / "rank0.spsum", v.files[0]);
       return std::string("d: missing rank(s) 1 of world size 2 (no rank1.spsum)");
     }},
    {"RankBeyondWorldSize", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank2.spsum", "");
       return std::string("d/rank2.spsum: rank 2 outside the world size 2 of the summaries "
                          "(d/rank0.spsum: record 0 at byte 0)");
     }},
    {"BadLength", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank1.spsum", std::string("\x03\x00\x00\x00xyz", 7));
       return std::string("d/rank1.spsum: record 0 at byte 0: bad length 3 (a step summary has at least 16 "
                          "bytes): not a summary file, or corrupted");
     }},
    {"Garbage", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank1.spsum", "this is not a summary file at all\n");
       // "this" read as a little-endian length: 0x73696874.
       return std::string("d/rank1.spsum: record 0 at byte 0: bad length 1936287860 (more than 256 MiB): not a "
                          "summary file, or corrupted");
     }},
    {"UndecodableSummary", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       std::string bytes = v.files[1];
       const size_t second = v.record_size(0, 1);
       bytes[second + 4] = 'X';  // the magic of record 1
       write_file(d / "rank1.spsum", bytes);
       return "d/rank1.spsum: record 1 at byte " + std::to_string(second) +
              ": cannot decode: step summary: bad magic (not a straggler_probe step summary)";
     }},
    {"CorruptedSummary", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       std::string bytes = v.files[0];
       bytes[bytes.size() - 3] ^= 0x5a;  // inside the last record's body
       write_file(d / "rank0.spsum", bytes);
       return "d/rank0.spsum: record 2 at byte " + std::to_string(v.files[0].size() - v.record_size(2, 0)) +
              ": cannot decode: step summary: checksum mismatch (corrupted)";
     }},
    {"SummaryOfAnotherRank", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank1.spsum", v.files[0]);
       return std::string("d/rank1.spsum: record 0 at byte 0: summary of rank 0 in the file of rank 1");
     }},
    {"WorldSizeDiffers", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       StepSummary s = v.run.steps[0][1];
       s.world_size = 3;
       write_file(d / "rank1.spsum", record(s));
       return std::string("d/rank1.spsum: record 0 at byte 0: world size 3, but d/rank0.spsum: record 0 at "
                          "byte 0 has 2");
     }},
    {"StepTwiceInOneFile", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       write_file(d / "rank1.spsum", v.files[1] + record(v.run.steps[1][1]));
       return "d/rank1.spsum: record 3 at byte " + end_of_rank1(v) + ": step " +
              std::to_string(v.run.steps[1][1].step) + " again (first in record 1)";
     }},
    {"AllFilesEmpty", [](const fs::path& d, const Valid&) {
       write_file(d / "rank0.spsum", "");
       write_file(d / "rank1.spsum", "");
       return std::string("d: no step summaries: all 2 rank file(s) are empty (no rank reached the end of a step)");
     }},
    {"NoCompleteStep", [](const fs::path& d, const Valid& v) {
       write_file(d / "rank0.spsum", record(v.run.steps[0][0]) + record(v.run.steps[1][0]));
       write_file(d / "rank1.spsum", record(v.run.steps[2][1]));
       return "d: no step has a summary from every rank (3 step(s); step " + std::to_string(v.run.steps[0][0].step) +
              " lacks rank(s) 1)";
     }},
    {"StepsNotInTheFiles", [](const fs::path& d, const Valid& v) {
       write_valid(d, v);
       return "--steps: none of the selected steps is available (steps " + std::to_string(v.run.steps[0][0].step) +
              " to " + std::to_string(v.run.steps[2][0].step) + " are)";
     },
     "--steps 900-901"},
};

class AnalyzeDirBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(AnalyzeDirBadInput, ExitsWithCode2AndOneLineNamingTheProblem) {
  const fs::path root = fs::temp_directory_path() / ("sp_analyze_dir_bad_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "d");
  static const Valid valid;
  const std::string expected = GetParam().make(root / "d", valid);
  const CliRun r = run_cli(std::string("analyze-dir d ") + GetParam().extra_args, root);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "straggler-probe: error: " + expected + "\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(root / "d" / "report")) << "nothing written on bad input";
  fs::remove_all(root);
}

std::string bad_case_name(const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Table, AnalyzeDirBadInput, ::testing::ValuesIn(kBadCases), bad_case_name);

// A rank killed while appending leaves its file cut inside the last record: the records before
// it are whole, so the cut one is left out with one warning and its step counts as incomplete.
struct TornTail {
  const char* name;
  std::function<std::string(const Valid& v)> rank1_bytes;
  std::function<std::string(const Valid& v)> warning;  // after "straggler-probe: warning: "
};

const std::vector<TornTail> kTornTails = {
    {"LengthPrefixCut",
     [](const Valid& v) { return v.files[1] + std::string("\x10\x00", 2); },
     [](const Valid& v) {
       return "d/rank1.spsum: record 3 at byte " + end_of_rank1(v) +
              ": cut short: 2 byte(s) of a 4-byte length prefix; the rank stopped while writing it? This last "
              "record is left out";
     }},
    {"RecordCut",
     [](const Valid& v) { return v.files[1].substr(0, v.files[1].size() - 10); },
     [](const Valid& v) {
       const size_t last = v.files[1].size() - v.record_size(2, 1);
       const size_t length = v.record_size(2, 1) - 4;
       return "d/rank1.spsum: record 2 at byte " + std::to_string(last) + ": cut short: length " +
              std::to_string(length) + " but " + std::to_string(length - 10) +
              " byte(s) follow; the rank stopped while writing it? This last record is left out";
     }},
};

class AnalyzeDirTornTail : public ::testing::TestWithParam<TornTail> {};

TEST_P(AnalyzeDirTornTail, LastRecordLeftOutWithOneWarning) {
  const fs::path root = fs::temp_directory_path() / ("sp_analyze_dir_torn_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "d");
  static const Valid valid;
  write_valid(root / "d", valid);
  write_file(root / "d" / "rank1.spsum", GetParam().rank1_bytes(valid));
  const CliRun r = run_cli("analyze-dir d --quiet", root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "straggler-probe: warning: " + GetParam().warning(valid) + "\n";
  EXPECT_EQ(r.err.find(warning), 0u) << r.err;
  const bool record_lost = std::string(GetParam().name) == "RecordCut";
  if (record_lost) {
    EXPECT_NE(r.err.find("1 step(s) skipped, not analysed"), std::string::npos) << r.err;
  } else {
    EXPECT_EQ(r.err, warning) << "nothing else to say: every step is whole";
  }
  EXPECT_TRUE(fs::exists(root / "d" / "report" / "report.json"));
  fs::remove_all(root);
}

std::string torn_tail_name(const ::testing::TestParamInfo<TornTail>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Table, AnalyzeDirTornTail, ::testing::ValuesIn(kTornTails), torn_tail_name);

TEST(AnalyzeDirCli, NoSuchDirectoryAndHelp) {
  const fs::path tmp = fs::temp_directory_path();
  const CliRun missing = run_cli("analyze-dir sp_no_such_dir_for_analyze_dir", tmp);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "straggler-probe: error: sp_no_such_dir_for_analyze_dir: no such directory\n");
  const CliRun help = run_cli("analyze-dir --help", tmp);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--out"), std::string::npos);
  EXPECT_NE(help.out.find("DIR/report"), std::string::npos);
}

}  // namespace
