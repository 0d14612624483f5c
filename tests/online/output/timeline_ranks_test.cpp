// timeline.json's ranks (online/src/output/timeline_ranks.h): every rank while the file fits its budget;
// beyond that rank 0, the named ranks and each stage's slowest first, and a note saying how many
// were left out and how to draw them all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"
#include "output/timeline_writer.h"

namespace sp::online {
namespace {

using nlohmann::json;

// The ranks whose real lanes have events, and the ranks named in process metadata.
struct Drawn {
  std::set<int> with_events, with_names;
};

Drawn drawn_ranks(const json& trace, int world) {
  Drawn d;
  for (const json& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const int pid = e.value("pid", -1);
    if (ph == "X" && pid < world) d.with_events.insert(pid);
    if (ph == "M" && e.at("name") == "process_name" && pid < world) d.with_names.insert(pid);
  }
  return d;
}

// A hand-made step of `world` ranks, `ops` per rank, as record_timeline keeps it.
TimelineStep made_step(int64_t step, int world, int stages, int ops, int named) {
  TimelineStep s;
  s.step = step;
  s.type_names = {"forward-compute", "backward-compute", "all-reduce"};
  s.named_rank = named;
  for (int r = 0; r < world; ++r) {
    s.rank_dp.push_back(r % (world / stages));
    s.rank_stage.push_back(r / (world / stages));
    s.rank_score.push_back(1.0 + 1e-4 * ((r * 37) % 101) + (r == named ? 0.5 : 0.0));
    for (int k = 0; k < ops; ++k) {
      const double t = 1e-3 * k;
      s.ops.push_back({r, k % 3, k % 3 == 2, t, t + 5e-4, t, t + 4e-4});
    }
  }
  return s;
}

TEST(TimelineRanks, LargeJobKeepsNamedRanksWithinTheByteBudget) {
  constexpr int kWorld = 4096, kNamed = 3001;
  std::deque<TimelineStep> steps;
  for (int64_t k = 0; k < 3; ++k) steps.push_back(made_step(100 + k, kWorld, 8, 30, k == 1 ? kNamed : -1));
  const std::string text = timeline_json_text(steps, json::object());
  EXPECT_LE(text.size(), kTimelineByteBudget + (size_t{64} << 10));
  EXPECT_GE(text.size(), kTimelineByteBudget * 9 / 10) << "the estimate should use the budget, not a fraction of it";
  const json trace = json::parse(text);
  const Drawn d = drawn_ranks(trace, kWorld);
  EXPECT_EQ(d.with_events, d.with_names);
  EXPECT_TRUE(d.with_events.count(0));
  EXPECT_TRUE(d.with_events.count(kNamed));
  std::set<int> stages;
  for (int r : d.with_events) stages.insert(r / (kWorld / 8));
  EXPECT_EQ(stages.size(), 8u) << "every stage's slowest is drawn";
  const json& note = trace.at("otherData").at("straggler_probe_timeline");
  EXPECT_EQ(note.at("ranks"), kWorld);
  EXPECT_EQ(note.at("ranks_drawn").get<int>(), static_cast<int>(d.with_events.size()));
  EXPECT_EQ(note.at("ranks_left_out").get<int>(), kWorld - static_cast<int>(d.with_events.size()));
  EXPECT_NE(note.at("note").get<std::string>().find("STRAGGLER_PROBE_TIMELINE_RANKS=4096"), std::string::npos);
  // The viewer shows it too: a global instant event at the start.
  bool marker = false;
  for (const json& e : trace.at("traceEvents")) marker |= e.at("ph") == "i" && e.at("s") == "g";
  EXPECT_TRUE(marker);

  // A job that fits is drawn whole, without a note; a count set by the user draws every rank.
  std::deque<TimelineStep> small{made_step(7, 64, 8, 30, 5)};
  const json whole = json::parse(timeline_json_text(small, json::object()));
  EXPECT_EQ(drawn_ranks(whole, 64).with_events.size(), 64u);
  EXPECT_FALSE(whole.at("otherData").contains("straggler_probe_timeline"));
  const std::string all = timeline_json_text(steps, json::object(), TimelineRankLimit{kWorld});
  EXPECT_EQ(all.find("straggler_probe_timeline"), std::string::npos);
  EXPECT_NE(all.find(R"x("name":"rank 4095 real (dp 511, stage 7)")x"), std::string::npos);
}

TEST(TimelineRanks, AnalyzerReportWithALowCapKeepsTheNamedRank) {
  testing::SyntheticJob job;
  job.dp = 8;
  job.pp = 4;
  job.microbatches = 2;
  job.jitter = 0.02;
  job.rank_speed.assign(32, 1.0);
  job.rank_speed[21] = 1.4;  // stage 2, dp rank 5
  const testing::SyntheticRun run = testing::run_synthetic(job, 14);
  const auto dir = std::filesystem::path(::testing::TempDir()) / "sp_online_timeline_ranks";
  std::filesystem::remove_all(dir);
  OnlineConfig cfg;
  cfg.world_size = 32;
  cfg.output_dir = dir.string();
  cfg.timeline_ranks = 6;
  cfg.log_sink = [](const std::string&) {};
  OnlineAnalyzer a(cfg);
  std::vector<StepVerdict> verdicts;
  for (const auto& step : run.steps) {
    for (const auto& s : step) {
      for (auto& v : a.add(s)) verdicts.push_back(std::move(v));
    }
  }
  for (auto& v : a.finish()) verdicts.push_back(std::move(v));
  ASSERT_GE(verdicts.size(), 3u);
  bool named = false;
  for (size_t i = verdicts.size() - 3; i < verdicts.size(); ++i) named |= verdicts[i].worst == "rank:21";
  ASSERT_TRUE(named) << "the slow rank is named in one of the drawn steps";
  ASSERT_TRUE(a.write_report((dir / "report").string()).ok);

  std::ifstream in(dir / "report" / "timeline.json");
  const json trace = json::parse(in);
  const Drawn d = drawn_ranks(trace, 32);
  EXPECT_EQ(d.with_events.size(), 6u);
  EXPECT_TRUE(d.with_events.count(0));
  EXPECT_TRUE(d.with_events.count(21));
  std::set<int> stages;
  for (int r : d.with_events) stages.insert(r / 8);
  EXPECT_EQ(stages.size(), 4u);
  const json& note = trace.at("otherData").at("straggler_probe_timeline");
  EXPECT_EQ(note.at("ranks_left_out"), 26);
  EXPECT_NE(note.at("note").get<std::string>().find("timeline_ranks=6"), std::string::npos);
}

}  // namespace
}  // namespace sp::online
