// Real 4-rank jobs (tests/data/online_jobs: what each rank of tests/python's DDP and GPipe jobs
// sent): the scalable analysis gives the lane oracle's metrics and causes on every step, and the
// verdicts are the ones tests/python expects of these jobs live.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "decision/cause_rules.h"
#include "ideal/ideal_window.h"
#include "oracle/lane_oracle.h"
#include "oracle/metrics_comparison.h"
#include "model/seq_evidence.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model_builder.h"
#include "straggler_probe/online/analyzer.h"
#include "summary_file_reader.h"

namespace sp::online {
namespace {

constexpr int kWorld = 4;
constexpr int64_t kFirstStep = 2;  // the probe's warmup_steps: earlier steps are not sent

// Steps (from kFirstStep) -> summary per rank.
std::map<int64_t, std::vector<runtime::StepSummary>> load_job(const std::string& name) {
  std::map<int64_t, std::vector<runtime::StepSummary>> steps;
  for (int r = 0; r < kWorld; ++r) {
    const std::string path = std::string(SP_ONLINE_JOBS_DIR) + "/" + name + "/rank" + std::to_string(r) + ".spsum";
    for (runtime::StepSummary& s : runtime::testing::read_summary_file(path)) {
      if (s.step < kFirstStep) continue;
      auto& by_rank = steps[s.step];
      by_rank.resize(kWorld);
      by_rank[static_cast<size_t>(r)] = std::move(s);
    }
  }
  return steps;
}

class RecordedJob : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedJob, SameMetricsAndCausesAsTheLaneOracle) {
  const auto steps = load_job(GetParam());
  ASSERT_GE(steps.size(), 10u) << "recorded data missing for " << GetParam();
  IdealWindow window{IdealConfig{}};
  SeqWindow seq{IdealConfig{}.window_steps};
  SlowdownAnalysis automatic, boundary;
  boundary.set_unit_method(UnitMethod::kBoundary);
  for (const auto& [step, summaries] : steps) {
    std::vector<const runtime::StepSummary*> by_rank;
    for (const auto& s : summaries) by_rank.push_back(&s);
    std::string error;
    const auto model = build_step_model(by_rank, ModelOptions{}, &error);
    ASSERT_TRUE(model) << "step " << step << ": " << error;
    window.push(collect_samples(*model));
    seq.push(*model);
    const Ideals ideals = window.ideals(*model);
    const SlowdownMetrics oracle = testing::lane_oracle_metrics(*model, ideals, 0.03, true);
    SlowdownMetrics a, b;
    automatic.compute(*model, ideals, 0.03, true, &a);
    boundary.compute(*model, ideals, 0.03, true, &b);
    const std::string where = GetParam() + " step " + std::to_string(step);
    expect_same_metrics(a, oracle, where);
    expect_same_metrics(b, oracle, where + " (boundary method)");
    // The cause rules see the same numbers, so they decide the same (one step's rules; the
    // persistence over steps is the same function of the same worst ranks).
    CauseInput in_a, in_o;
    for (auto [in, w] : {std::pair<CauseInput*, const SlowdownMetrics*>{&in_a, &a}, {&in_o, &oracle}}) {
      in->model = &*model;
      in->what_if = w;
      in->seq = seq.evidence();
      in->worst_count.assign(kWorld, 0);
    }
    const CauseResult ca = classify(in_a, CauseThresholds{});
    const CauseResult co = classify(in_o, CauseThresholds{});
    EXPECT_EQ(ca.cause, co.cause) << where;
    EXPECT_EQ(ca.worst, co.worst) << where;
  }
}

INSTANTIATE_TEST_SUITE_P(OnlineRecorded, RecordedJob,
                         ::testing::Values("dp-slow-rank", "dp-gc", "pp-heavy-last-stage"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// The verdicts tests/python asserts of these jobs when they run live.
std::vector<StepVerdict> analyze(const std::string& job) {
  OnlineConfig cfg;
  cfg.world_size = kWorld;
  OnlineAnalyzer a(cfg);
  std::vector<StepVerdict> out;
  for (auto& [step, summaries] : load_job(job)) {
    for (const auto& s : summaries) {
      for (StepVerdict& v : a.add(s)) out.push_back(std::move(v));
    }
  }
  for (StepVerdict& v : a.finish()) out.push_back(std::move(v));
  EXPECT_EQ(a.stats().steps_skipped, 0u) << a.stats().last_error;
  return out;
}

TEST(OnlineRecordedVerdicts, EachJobIsNamedForWhatIsWrongWithIt) {
  int slow = 0, gc = 0, gc_steps = 0, stage = 0;
  const auto dp = analyze("dp-slow-rank");
  for (const StepVerdict& v : dp) slow += v.cause == Cause::kWorker && v.worst == "rank:2";
  ASSERT_GE(dp.size(), 10u);
  EXPECT_GE(slow, static_cast<int>(0.8 * static_cast<double>(dp.size()))) << dp.back().evidence;
  for (const StepVerdict& v : analyze("dp-gc")) {
    if (v.step % 4 != 3) continue;
    ++gc_steps;
    gc += v.cause == Cause::kGc && v.worst == "rank:1";
  }
  EXPECT_GE(gc_steps, 3);  // steps 3, 7, 11
  EXPECT_EQ(gc, gc_steps);
  const auto pp = analyze("pp-heavy-last-stage");
  for (const StepVerdict& v : pp) stage += v.cause == Cause::kStageImbalance && v.worst == "stage:1";
  EXPECT_GE(stage, static_cast<int>(0.9 * static_cast<double>(pp.size())));
}

}  // namespace
}  // namespace sp::online
