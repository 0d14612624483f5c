// Two SlowdownMetrics of one step compared field by field: what comes from full replays
// (T, T_ideal, T without delays, S_t, the timeline) must be equal bit for bit; what the unit
// scenarios give (S per dp rank / stage / rank, the fix-stage shares, the fix-dp gains, M_S, M_W)
// within 1e-9, relative for slowdowns and absolute for shares (they are differences of step
// times divided by the recoverable part, so they are near 0 for a clean step).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "replay/slowdown_metrics.h"

namespace sp::online {

inline void expect_near_all(const std::vector<double>& a, const std::vector<double>& b,
                            const std::string& what, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << what << " at " << where;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-9 * std::max(1.0, std::fabs(b[i]))) << what << "[" << i << "] at " << where;
  }
}

inline void expect_same_metrics(const SlowdownMetrics& a, const SlowdownMetrics& b,
                                const std::string& where) {
  EXPECT_EQ(a.T_real, b.T_real) << where;
  EXPECT_EQ(a.T_nodelay, b.T_nodelay) << where;
  EXPECT_EQ(a.T_ideal, b.T_ideal) << where;
  EXPECT_EQ(a.op_S, b.op_S) << where;
  expect_near_all(a.dp_S, b.dp_S, "dp_S", where);
  expect_near_all(a.stage_S, b.stage_S, "stage_S", where);
  expect_near_all(a.worker_S, b.worker_S, "worker_S", where);
  expect_near_all(a.fix_stage_share, b.fix_stage_share, "fix_stage_share", where);
  expect_near_all(a.dp_fix_gain, b.dp_fix_gain, "dp_fix_gain", where);
  expect_near_all(a.own_work_ratio, b.own_work_ratio, "own_work_ratio", where);
  EXPECT_NEAR(a.M_S, b.M_S, 1e-9) << where;
  EXPECT_NEAR(a.M_W, b.M_W, 1e-9) << where;
  EXPECT_EQ(a.top_workers, b.top_workers) << where;
  EXPECT_EQ(a.real_start, b.real_start) << where;
  EXPECT_EQ(a.real_end, b.real_end) << where;
  EXPECT_EQ(a.ideal_start, b.ideal_start) << where;
  EXPECT_EQ(a.ideal_end, b.ideal_end) << where;
}

}  // namespace sp::online
