// The per-rank summary file of a preloaded non-Python NCCL program (nccl_program.cpp under the
// real libstraggler_probe.so with STRAGGLER_PROBE_OUT_DIR): steps were found from the operation
// sequence without Python, and each step's summary holds the NCCL operations with their identity.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "summary_file_reader.h"

namespace {

using sp::runtime::testing::read_summary_file;

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
