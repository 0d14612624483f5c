// Feeds every summary of a synthetic run to one OnlineAnalyzer, as rank 0 would receive them,
// and returns every verdict (a step the analyzer skipped or failed on fails the test).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "straggler_probe/online/analyzer.h"
#include "synthetic_job.h"

namespace sp::online::testing {

inline std::vector<StepVerdict> analyze_run(const SyntheticRun& run, OnlineConfig cfg = {}) {
  cfg.world_size = static_cast<int>(run.steps.at(0).size());
  OnlineAnalyzer a(cfg);
  std::vector<StepVerdict> out;
  for (const auto& step : run.steps) {
    for (const auto& s : step) {
      for (StepVerdict& v : a.add(s)) out.push_back(std::move(v));
    }
  }
  for (StepVerdict& v : a.finish()) out.push_back(std::move(v));
  EXPECT_EQ(a.stats().steps_skipped, 0u) << a.stats().last_error;
  EXPECT_EQ(a.stats().analysis_errors, 0u) << a.stats().last_error;
  return out;
}

}  // namespace sp::online::testing
