// Bad input never crashes the analysis: each problem skips its step with a reason, bounded
// memory holds when ranks fall silent, and good steps around bad ones are still analysed.
#include <gtest/gtest.h>

#include <cstdint>

#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::run_synthetic;
using testing::SyntheticJob;
using testing::SyntheticRun;

struct Fed {
  std::vector<StepVerdict> verdicts;
  OnlineStats stats;
};

// Feeds every summary (after `mutate` had its way with the run) and finishes.
template <typename F>
Fed feed(SyntheticRun run, F mutate, OnlineConfig cfg = {}) {
  mutate(run);
  cfg.world_size = static_cast<int>(run.steps.at(0).size());
  OnlineAnalyzer a(cfg);
  Fed out;
  for (auto& step : run.steps) {
    for (auto& s : step) {
      for (auto& v : a.add(s)) out.verdicts.push_back(v);
    }
  }
  for (auto& v : a.finish()) out.verdicts.push_back(v);
  out.stats = a.stats();
  return out;
}

const StepVerdict* verdict_of(const Fed& f, int64_t step) {
  for (const auto& v : f.verdicts) {
    if (v.step == step) return &v;
  }
  return nullptr;
}

SyntheticRun ddp_run(int steps = 6) {
  SyntheticJob job;
  return run_synthetic(job, steps);
}

void expect_skipped(const Fed& f, int64_t step, const std::string& reason) {
  const StepVerdict* v = verdict_of(f, step);
  ASSERT_NE(v, nullptr) << "no verdict for step " << step;
  EXPECT_FALSE(v->analyzed);
  EXPECT_EQ(v->skip_reason, reason);
  for (const auto& other : f.verdicts) {
    if (other.step != step) {
      EXPECT_TRUE(other.analyzed) << other.step << ": " << other.skip_reason;
    }
  }
}

TEST(OnlineMalformed, MissingRankSkipsTheStepOnceLaterStepsComplete) {
  SyntheticRun run = ddp_run();
  run.steps[1].pop_back();  // rank 3 never sends step 1
  const Fed f = feed(run, [](SyntheticRun&) {});
  expect_skipped(f, 1, "incomplete: no summary from rank(s) 3 by step 5");
  EXPECT_EQ(f.stats.skip_reasons.at("incomplete"), 1u);
  EXPECT_EQ(f.stats.steps_analyzed, 5u);
}

TEST(OnlineMalformed, CollectiveMissingOnOneRank) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) {
    for (auto& op : r.steps[2][2].ops) {
      if (op.kind == SP_OP_COLLECTIVE && op.bytes == 1000) op.seq += 100;
    }
  });
  expect_skipped(f, 2, "malformed: collective (group 1000 seq 4) has 3 of 4 members (missing on ranks 2)");
}

TEST(OnlineMalformed, RanksDisagreeOnTheCollectiveType) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) {
    for (auto& op : r.steps[3][1].ops) {
      if (op.kind == SP_OP_COLLECTIVE && op.bytes == 1000) op.coll = SP_COLL_BROADCAST;
    }
  });
  expect_skipped(f, 3, "malformed: ranks disagree on collective (group 1000 seq 6): rank 0 says all-reduce, rank 1 says broadcast");
}

TEST(OnlineMalformed, OpEndingBeforeItStarts) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) { r.steps[0][1].ops[0].end_ns = r.steps[0][1].ops[0].start_ns - 1; });
  expect_skipped(f, 0, "malformed: rank 1: op 0 ends before it starts");
}

// Bytes from another rank whose times or clock offset would overflow the model's int64
// arithmetic (the asan fuzzer found one: an offset near -2^63) are rejected, not computed with.
TEST(OnlineMalformed, TimesAndClockOffsetsOutOfRange) {
  const Fed offset = feed(ddp_run(), [](SyntheticRun& r) { r.steps[2][1].clock_offset_ns = INT64_MIN + 5; });
  expect_skipped(offset, 2, "malformed: rank 1: step time or clock offset out of range");
  const Fed time = feed(ddp_run(), [](SyntheticRun& r) { r.steps[3][2].ops[1].end_ns = UINT64_MAX - 1; });
  expect_skipped(time, 3, "malformed: rank 2: op 1 has a time out of range");
}

TEST(OnlineMalformed, UnknownOpKind) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) { r.steps[4][0].ops[2].kind = 99; });
  expect_skipped(f, 4, "malformed: rank 0: op 2 has unknown kind 99");
}

TEST(OnlineMalformed, NameOutOfRange) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) { r.steps[4][3].ops[1].name_id = 5; });
  expect_skipped(f, 4, "malformed: rank 3: op 1 names entry 5 but the summary has 1 names");
}

TEST(OnlineMalformed, UnmatchedPipelineSend) {
  SyntheticJob job;
  job.dp = 1;
  job.pp = 2;
  job.microbatches = 2;
  const Fed f = feed(run_synthetic(job, 4), [](SyntheticRun& r) {
    auto& ops = r.steps[2][1].ops;  // drop one recv on stage 1
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == SP_OP_RECV) {
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  });
  expect_skipped(f, 2, "malformed: p2p 0->1: 2 sends but 1 recvs");
}

TEST(OnlineMalformed, SummaryFromAnUnknownRankOrWorld) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) {
    r.steps[1][2].rank = 9;
    r.steps[3][0].world_size = 8;
  });
  const StepVerdict* v1 = verdict_of(f, 1);
  const StepVerdict* v3 = verdict_of(f, 3);
  ASSERT_TRUE(v1 && v3);
  EXPECT_EQ(v1->skip_reason, "malformed: summary from rank 9 in a world of 4");
  EXPECT_EQ(v3->skip_reason, "malformed: rank 0 reports world size 8, expected 4");
  EXPECT_EQ(f.stats.summaries_rejected, 2u);
  EXPECT_EQ(f.stats.steps_analyzed, 4u);
}

TEST(OnlineMalformed, DuplicateAndLateSummariesAreCountedNotUsed) {
  SyntheticRun run = ddp_run(3);
  OnlineConfig cfg;
  cfg.world_size = 4;
  OnlineAnalyzer a(cfg);
  EXPECT_TRUE(a.add(run.steps[0][0]).empty());
  EXPECT_TRUE(a.add(run.steps[0][0]).empty());
  for (int r = 1; r < 4; ++r) (void)a.add(run.steps[0][static_cast<size_t>(r)]);
  EXPECT_TRUE(a.add(run.steps[0][1]).empty());  // step 0 is closed: late
  EXPECT_EQ(a.stats().summaries_duplicate, 1u);
  EXPECT_EQ(a.stats().summaries_late, 1u);
  EXPECT_EQ(a.stats().steps_analyzed, 1u);
}

TEST(OnlineMalformed, SilentRanksCannotGrowMemory) {
  SyntheticRun run = ddp_run(20);
  OnlineConfig cfg;
  cfg.world_size = 4;
  cfg.max_pending_steps = 3;
  OnlineAnalyzer a(cfg);
  std::vector<StepVerdict> vs;
  for (auto& step : run.steps) {
    for (int r = 0; r < 3; ++r) {  // rank 3 is silent
      for (auto& v : a.add(step[static_cast<size_t>(r)])) vs.push_back(v);
    }
  }
  EXPECT_EQ(vs.size(), 17u);  // all but the 3 still pending
  EXPECT_EQ(vs.front().skip_reason, "incomplete: no summary from rank(s) 3 (more than 3 steps pending)");
  const auto rest = a.finish();
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest.back().skip_reason, "incomplete: no summary from rank(s) 3 at the end of the run");
  EXPECT_EQ(a.stats().steps_skipped, 20u);
}

TEST(OnlineMalformed, BadAnnotationIsNotedNotFatal) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) { r.steps[2][0].annotations.push_back({0, "seq_lens", "12,abc"}); });
  for (const auto& v : f.verdicts) EXPECT_TRUE(v.analyzed) << v.skip_reason;
  EXPECT_NE(f.stats.last_error.find("not a list of lengths"), std::string::npos) << f.stats.last_error;
}

// A micro-batch number no op has (the largest an int holds) is someone else's bytes: its
// lengths match no op, and nothing is sized by it (the outlier guard's lookup is sorted).
TEST(OnlineMalformed, SequenceLengthsOfAnUnknownMicrobatchMatchNoOp) {
  const Fed f = feed(ddp_run(), [](SyntheticRun& r) {
    for (auto& step : r.steps) step[1].annotations.push_back({2147483647, "seq_lens", "512,512"});
  });
  ASSERT_FALSE(f.verdicts.empty());
  for (const auto& v : f.verdicts) EXPECT_TRUE(v.analyzed) << v.skip_reason;
}

}  // namespace
}  // namespace sp::online
