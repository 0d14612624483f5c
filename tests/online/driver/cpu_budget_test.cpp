// Rank 0's CPU is the job's: the analysis thread's lowered priority, and the CPU budget that
// skips whole steps while the analysis has used up its share of a core.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "driver/cpu_budget.h"
#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/online/thread_priority.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

int this_thread_nice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

TEST(OnlineCpuBudget, LowersOnlyTheCallingThreadsPriority) {
  const int before = this_thread_nice();
  int inside = 0, inside_after = 0;
  std::string why;
  bool ok = false;
  std::thread t([&] {
    inside = this_thread_nice();
    ok = lower_this_thread_priority(kAnalysisNiceIncrement, &why);
    inside_after = this_thread_nice();
  });
  t.join();
  ASSERT_TRUE(ok) << why;
  EXPECT_EQ(inside_after, std::min(19, inside + kAnalysisNiceIncrement));
  EXPECT_EQ(this_thread_nice(), before);  // the training's threads keep theirs
}

TEST(OnlineCpuBudget, CreditRefillsAtTheShareOfWallTimeAndCapsTheBurst) {
  constexpr int64_t kS = 1'000'000'000;
  CpuBudget b(0.1, 10.0);  // a tenth of a core, bursts of up to 1 s of CPU
  ASSERT_TRUE(b.allow(0));
  b.spend(3.0);              // one expensive step: 3 s of CPU
  EXPECT_FALSE(b.allow(10 * kS));  // 10 s later: -2 + 1 = -1
  EXPECT_TRUE(b.allow(20 * kS));   // -1 + 1 = 0
  b.spend(0.5);
  EXPECT_TRUE(b.allow(1000 * kS));  // a long idle time refills at most the cap (1 s)
  b.spend(1.5);
  EXPECT_FALSE(b.allow(1000 * kS));
  CpuBudget unlimited(0, 10.0);
  unlimited.spend(100);
  EXPECT_TRUE(unlimited.allow(0));
}

TEST(OnlineCpuBudget, AnalyzerSkipsWholeStepsOverBudgetAndSaysSo) {
  testing::SyntheticJob job;
  const auto run = testing::run_synthetic(job, 6);
  for (const double budget : {0.0, 1e-9}) {
    OnlineConfig cfg;
    cfg.world_size = job.dp;
    cfg.cpu_budget = budget;
    OnlineAnalyzer a(cfg);
    std::vector<StepVerdict> out;
    for (const auto& step : run.steps) {
      for (const auto& s : step) {
        for (StepVerdict& v : a.add(s)) out.push_back(std::move(v));
      }
    }
    ASSERT_EQ(out.size(), 6u);
    const OnlineStats st = a.stats();
    EXPECT_GT(st.analysis_cpu_s, 0.0);
    EXPECT_GE(st.analysis_cpu_s, st.analysis_cpu_max_s);
    if (budget == 0) {
      EXPECT_EQ(st.steps_analyzed, 6u);
      continue;
    }
    // The first step spends the credit; the next ones come at once (no wall time to refill).
    EXPECT_TRUE(out[0].analyzed);
    for (size_t i = 1; i < out.size(); ++i) {
      EXPECT_FALSE(out[i].analyzed);
      EXPECT_EQ(out[i].skip_reason.rfind("cpu budget: the analysis has used its 0% share", 0), 0u)
          << out[i].skip_reason;
    }
    EXPECT_EQ(st.skip_reasons.at("cpu budget"), 5u);
  }
}

}  // namespace
}  // namespace sp::online
