// One op, one source: an op timed by several sources (CPU-timed region, CUDA events, CUPTI span;
// c10d hooks and the NCCL plugin) enters the step model once, with the best source, and the
// left-out records are counted by kind and source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "model/source_selection.h"
#include "model/step_model_builder.h"
#include "straggler_probe/online/analyzer.h"
#include "summary_builders.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::kMs;
using testing::kT0;

sp_event op(uint32_t kind, uint32_t source, uint64_t start_ms, uint64_t end_ms, int mb = -1) {
  return testing::timed_op(kind, start_ms, end_ms, mb, source);
}

sp_event allreduce(uint32_t source, uint64_t group, uint64_t seq, uint64_t start_ms,
                   uint64_t end_ms) {
  return testing::all_reduce_op(start_ms, end_ms, group, seq, 2, source);
}

runtime::StepSummary summary(int rank, int world, std::vector<sp_event> ops) {
  return testing::rank_summary(rank, world, std::move(ops), 100);
}

TEST(OnlineSourceSelection, ComputeTakesTheBestSourceOfEachOpAndKeepsWhatItLacks) {
  const std::vector<runtime::StepSummary> ss = {summary(0, 1, {
      op(SP_OP_FORWARD, SP_TIME_CPU, 0, 10, 0),          // 0: superseded by CUPTI
      op(SP_OP_FORWARD, SP_TIME_CUPTI, 1, 9, 0),          // 1
      op(SP_OP_FORWARD, SP_TIME_CPU, 10, 20, 1),         // 2: CUPTI missed it: kept
      op(SP_OP_FORWARD, SP_TIME_CUDA_EVENT, 10, 20, 0),   // 3: superseded by CUPTI
      op(SP_OP_BACKWARD, SP_TIME_CPU, 20, 40, 0),        // 4: superseded by CUDA events
      op(SP_OP_BACKWARD, SP_TIME_CUDA_EVENT, 21, 39, 0),  // 5
      op(SP_OP_GC, SP_TIME_CPU, 5, 6),                   // 6: always CPU-timed
      op(SP_OP_DATA_WAIT, SP_TIME_CPU, 0, 1),            // 7
      op(SP_OP_OPTIMIZER, SP_TIME_CPU, 40, 45),          // 8: the only source
  })};
  const SourceSelection sel = select_sources(testing::summary_ptrs(ss));
  EXPECT_EQ(sel.keep[0], (std::vector<bool>{false, true, true, false, false, true, true, true, true}));
  EXPECT_EQ(sel.superseded, 3u);
  EXPECT_EQ(sel.kept_alone, 1u);
  EXPECT_EQ(sel.superseded_by, (std::map<std::string, uint64_t>{
                                   {"backward: cpu < cuda-event", 1},
                                   {"forward: cuda-event < cupti", 1},
                                   {"forward: cpu < cupti", 1}}));
}

TEST(OnlineSourceSelection, NamedRegionsAreMatchedByName) {
  runtime::StepSummary s = summary(0, 1, {
      op(SP_OP_OTHER, SP_TIME_CPU, 0, 10),
      op(SP_OP_OTHER, SP_TIME_CUPTI, 1, 9),
      op(SP_OP_OTHER, SP_TIME_CPU, 10, 20),  // another region, never on the GPU
  });
  s.names = {"", "attention", "tokenize"};
  s.ops[0].name_id = s.ops[1].name_id = 1;
  s.ops[2].name_id = 2;
  const std::vector<runtime::StepSummary> ss = {s};
  const SourceSelection sel = select_sources(testing::summary_ptrs(ss));
  EXPECT_EQ(sel.keep[0], (std::vector<bool>{false, true, true}));
}

TEST(OnlineSourceSelection, CommunicationUsesTheBestSourceEveryRankHas) {
  // Both ranks have the NCCL plugin's view and the c10d hooks' view of one all-reduce (another
  // group hash and sequence numbering): NCCL wins on both.
  std::vector<runtime::StepSummary> ss = {
      summary(0, 2, {allreduce(SP_TIME_CPU, 7, 1, 30, 55), allreduce(SP_TIME_NCCL, 99, 0, 31, 54)}),
      summary(1, 2, {allreduce(SP_TIME_CPU, 7, 1, 50, 55), allreduce(SP_TIME_NCCL, 99, 0, 50, 54)}),
  };
  SourceSelection sel = select_sources(testing::summary_ptrs(ss));
  EXPECT_EQ(sel.keep[0], (std::vector<bool>{false, true}));
  EXPECT_EQ(sel.keep[1], (std::vector<bool>{false, true}));
  EXPECT_EQ(sel.superseded_by.at("collective: cpu < nccl"), 2u);

  // Rank 1 has no NCCL view (its plugin slot was taken): CPU times everywhere, so that the
  // collective still matches across ranks.
  ss[1].ops.pop_back();
  sel = select_sources(testing::summary_ptrs(ss));
  EXPECT_EQ(sel.keep[0], (std::vector<bool>{true, false}));
  EXPECT_EQ(sel.keep[1], (std::vector<bool>{true}));
  EXPECT_EQ(sel.superseded_by.at("collective: nccl < cpu"), 1u);
}

TEST(OnlineSourceSelection, TheModelCountsAnOpTimedTwiceOnce) {
  const std::vector<runtime::StepSummary> ss = {
      summary(0, 2, {op(SP_OP_FORWARD, SP_TIME_CPU, 0, 10, 0), op(SP_OP_FORWARD, SP_TIME_CUPTI, 2, 9, 0),
                     allreduce(SP_TIME_CPU, 7, 1, 30, 55), allreduce(SP_TIME_NCCL, 99, 0, 31, 54)}),
      summary(1, 2, {op(SP_OP_FORWARD, SP_TIME_CPU, 0, 20, 0), op(SP_OP_FORWARD, SP_TIME_CUPTI, 2, 19, 0),
                     allreduce(SP_TIME_CPU, 7, 1, 50, 55), allreduce(SP_TIME_NCCL, 99, 0, 50, 54)}),
  };
  std::string err;
  const auto m = build_step_model(testing::summary_ptrs(ss), ModelOptions{}, &err);
  ASSERT_TRUE(m) << err;
  ASSERT_EQ(m->ops.size(), 4u) << "one forward and one all-reduce per rank";
  EXPECT_EQ(m->groups.size(), 1u);
  EXPECT_EQ(m->superseded, 4u);
  for (const LogicalOp& o : m->ops) {
    if (o.kind == SP_OP_FORWARD) {
      EXPECT_NEAR(o.end - o.start, o.rank == 0 ? 0.007 : 0.017, 1e-9) << "the CUPTI span";
    } else {
      EXPECT_NEAR(o.own, 0.004, 1e-9) << "NCCL's transfer time: 54 - 50 ms";
    }
  }
}

// Every compute op and collective of a synthetic job reported a second time, as CUPTI and NCCL
// would, with the same times: the verdicts are those of the job reported once, and the report
// says what was left out.
TEST(OnlineSourceSelection, DuplicatedSourcesGiveTheSameVerdictsAndAreReported) {
  testing::SyntheticJob job;
  job.dp = 2;
  job.microbatches = 2;
  job.rank_speed = {1, 1.4};
  const testing::SyntheticRun run = testing::run_synthetic(job, 8);
  OnlineConfig cfg;
  cfg.world_size = 2;
  cfg.log_sink = [](const std::string&) {};
  OnlineAnalyzer once(cfg), twice(cfg);
  std::vector<StepVerdict> v1, v2;
  uint64_t copies = 0;
  for (const auto& step : run.steps) {
    for (const auto& s : step) {
      for (auto& v : once.add(s)) v1.push_back(v);
      runtime::StepSummary d = s;
      for (const sp_event& e : s.ops) {
        sp_event c = e;
        if (e.kind == SP_OP_FORWARD || e.kind == SP_OP_BACKWARD || e.kind == SP_OP_OPTIMIZER) {
          c.time_source = SP_TIME_CUPTI;
        } else if (e.kind == SP_OP_COLLECTIVE) {
          c.time_source = SP_TIME_NCCL;
          c.group_id ^= 0x5a5a;
          c.seq += 1000;
        } else {
          continue;
        }
        d.ops.push_back(c);
        ++copies;
      }
      for (auto& v : twice.add(d)) v2.push_back(v);
    }
  }
  for (auto& v : once.finish()) v1.push_back(v);
  for (auto& v : twice.finish()) v2.push_back(v);
  ASSERT_EQ(v1.size(), v2.size());
  for (size_t i = 0; i < v1.size(); ++i) {
    ASSERT_TRUE(v2[i].analyzed) << v2[i].skip_reason;
    EXPECT_NEAR(v1[i].S, v2[i].S, 1e-9);
    EXPECT_EQ(v1[i].worker_S.size(), v2[i].worker_S.size());
    for (size_t w = 0; w < v1[i].worker_S.size(); ++w) {
      EXPECT_NEAR(v1[i].worker_S[w], v2[i].worker_S[w], 1e-9);
    }
  }
  const OnlineStats st = twice.stats();
  EXPECT_EQ(st.ops_superseded, copies) << "one record of each pair left out";
  EXPECT_GT(st.ops_superseded_by.at("forward: cpu < cupti"), 0u);
  EXPECT_GT(st.ops_superseded_by.at("collective: cpu < nccl"), 0u);
  EXPECT_EQ(once.stats().ops_superseded, 0u);

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("sp_source_sel_" + std::to_string(getpid()))).string();
  ASSERT_TRUE(twice.write_report(dir).ok);
  std::ifstream rf(dir + "/report.json");
  const auto report = nlohmann::json::parse(rf);
  EXPECT_EQ(report.at("stats").at("ops_superseded").get<uint64_t>(), copies);
  EXPECT_TRUE(report.at("stats").at("ops_superseded_by").contains("backward: cpu < cupti"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sp::online
