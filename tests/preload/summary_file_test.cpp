// The per-rank summary file of a preloaded non-Python NCCL program (nccl_program.cpp under the
// real libstraggler_probe.so with STRAGGLER_PROBE_OUT_DIR): steps were found from the operation
// sequence without Python, and each step's summary holds the NCCL operations with their identity.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "straggler_probe/summary_file.h"
#include "summary_file_reader.h"

namespace {

using sp::runtime::testing::read_summary_file;

// The framing unit both sides share (straggler_probe/summary_file.h): what append_record writes,
// the reader reads back, and file names carry the rank.
TEST(SummaryFileFraming, RecordsRoundTripAndNamesCarryTheRank) {
  namespace summary_file = sp::runtime::summary_file;
  EXPECT_EQ(summary_file::file_name(12), "rank12.spsum");
  EXPECT_EQ(summary_file::rank_of_file_name("rank12.spsum"), 12);
  EXPECT_FALSE(summary_file::rank_of_file_name("rank.spsum"));
  EXPECT_FALSE(summary_file::rank_of_file_name("rank1x.spsum"));
  EXPECT_FALSE(summary_file::rank_of_file_name("r1.spsum"));
  EXPECT_EQ(summary_file::decode_length(summary_file::encode_length(0x01020304u)), 0x01020304u);
  EXPECT_NE(summary_file::length_problem(3).find("at least 16 bytes"), std::string::npos);
  EXPECT_EQ(summary_file::length_problem(100), "");

  const std::string path = ::testing::TempDir() + "framing_rank3.spsum";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  for (int64_t step : {4, 5}) {
    sp::runtime::StepSummary s;
    s.rank = 3;
    s.world_size = 8;
    s.step = step;
    const std::string bytes = sp::runtime::encode_summary(s);
    ASSERT_TRUE(summary_file::append_record(f, bytes.data(), bytes.size()));
  }
  EXPECT_FALSE(summary_file::append_record(f, "short", 5)) << "no reader accepts it";
  std::fclose(f);
  const auto read = read_summary_file(path);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].step, 4);
  EXPECT_EQ(read[1].step, 5);
  EXPECT_EQ(read[1].rank, 3);
}

TEST(SummaryFile, StepsFoundWithoutPythonHoldTheNcclOperations) {
  const char* dir = std::getenv("SP_TEST_OUT_DIR");
  ASSERT_NE(dir, nullptr);
  const auto steps = read_summary_file(std::string(dir) + "/rank0.spsum");
  // 50 steps of (all-reduce, send/recv group): the period is found after 24 operations.
  ASSERT_GE(steps.size(), 30u);
  // None skipped: the run keeps the default grace, so its last steps are still waiting for late
  // events when the program exits; the exit flush closes and keeps them all.
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, steps[i - 1].step + 1) << "a step is missing before step " << steps[i].step;
  }
  // One communicator: its all-reduces share one group id; its group calls share another (their
  // own sequence space, so (group, seq) never names two operations).
  uint64_t coll_group_id = 0, group_call_id = 0;
  size_t colls = 0, groups = 0;
  for (const auto& s : steps) {
    EXPECT_EQ(s.rank, 0);
    EXPECT_EQ(s.world_size, 1);
    for (const auto& op : s.ops) {
      if (op.kind != SP_OP_COLLECTIVE) continue;
      if (op.coll == SP_COLL_ALL_REDUCE) {
        if (coll_group_id == 0) coll_group_id = op.group_id;
        EXPECT_EQ(op.group_id, coll_group_id) << "one communicator";
        EXPECT_EQ(op.bytes, 256u);
        ++colls;
      } else if (op.coll == SP_COLL_NONE) {
        if (group_call_id == 0) group_call_id = op.group_id;
        EXPECT_EQ(op.group_id, group_call_id) << "one communicator's group calls";
        EXPECT_EQ(op.bytes, 64u) << "send + recv folded into one group operation";
        ++groups;
      }
    }
  }
  EXPECT_NE(coll_group_id, 0u);
  EXPECT_NE(group_call_id, 0u);
  EXPECT_NE(group_call_id, coll_group_id);
  EXPECT_GE(colls, 30u);
  EXPECT_EQ(colls, groups);
  // Every analysed step holds the same pattern: one all-reduce and one group.
  size_t regular = 0;
  for (size_t i = 1; i + 1 < steps.size(); ++i) regular += steps[i].ops.size() == 2;
  EXPECT_GE(regular, steps.size() - 4);
}

}  // namespace
