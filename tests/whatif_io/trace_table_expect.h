// Test helper: two trace tables are equal column by column (each column reported on its own,
// so a failure says which one differs).
#pragma once

#include <gtest/gtest.h>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif::testing {

inline void expect_same_table(const TraceTable& a, const TraceTable& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.dp_rank, b.dp_rank);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.optype, b.optype);
  EXPECT_EQ(a.start_ts, b.start_ts);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.seq_id, b.seq_id);
  EXPECT_EQ(a.mc, b.mc);
  EXPECT_EQ(a.mb_id, b.mb_id);
  EXPECT_EQ(a.gmc, b.gmc);
}

}  // namespace sp::whatif::testing
