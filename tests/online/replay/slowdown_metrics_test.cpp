// Same answers as before: the per-step metrics (S, S_t, S_w per dp rank / stage / rank, M_S,
// M_W, the top workers, the timeline) and the cause they lead to, computed by SlowdownAnalysis
// and by the lane oracle (every scenario a lane of the engine's simulator over the whole step,
// the product's method before), on synthetic jobs with planted stragglers: data parallel,
// GPipe and 1F1B pipelines, GC pauses, sequence-length imbalance, a heavier stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>

#include "decision/cause_rules.h"
#include "ideal/ideal_window.h"
#include "oracle/lane_oracle.h"
#include "oracle/metrics_comparison.h"
#include "model/seq_evidence.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model_builder.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::Schedule;
using testing::SyntheticJob;

struct Case {
  std::string name;
  SyntheticJob job;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&out](std::string name, int dp, int pp, int mb, Schedule schedule) -> SyntheticJob& {
    SyntheticJob j;
    j.dp = dp;
    j.pp = pp;
    j.microbatches = mb;
    j.schedule = schedule;
    j.jitter = 0.02;
    out.push_back({std::move(name), j});
    return out.back().job;
  };
  add("dp16-slow-rank", 16, 1, 2, Schedule::kGPipe).rank_speed = std::vector<double>(5, 1.0);
  out.back().job.rank_speed.back() = 1.3;
  add("dp8-clean", 8, 1, 1, Schedule::kGPipe);
  add("gpipe-4x4-slow-rank", 4, 4, 4, Schedule::kGPipe).rank_speed = {1, 1, 1, 1, 1, 1.4};
  add("gpipe-3x4-heavy-last-stage", 3, 4, 4, Schedule::kGPipe).stage_speed = {1, 1, 1, 1.5};
  add("1f1b-4x4-slow-rank", 4, 4, 8, Schedule::k1F1B).rank_speed = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1.3};
  add("1f1b-8x2-gc", 8, 2, 4, Schedule::k1F1B).gc = {{3, 9, 0.05}, {5, 2, 0.04}};
  SyntheticJob& seq = add("dp4-seq-lens", 4, 1, 4, Schedule::kGPipe);
  seq.seq_lens = true;
  seq.jitter = 0.005;
  add("pipeline-only-1x4", 1, 4, 4, Schedule::k1F1B).stage_speed = {1, 1.3, 1, 1};
  return out;
}

// One analysed step of both methods side by side, as the analyzer runs it.
struct Pipeline {
  IdealWindow window{IdealConfig{}};
  SeqWindow seq{IdealConfig{}.window_steps};
  std::deque<int> worst_new, worst_oracle;
  SlowdownAnalysis automatic, boundary;  // the product's choice of method; the boundary forced
};

CauseResult cause_of(const StepModel& m, const SlowdownMetrics& w, const SeqEvidence& seq,
                     std::deque<int>* history) {
  const CauseThresholds th;
  history->push_back(w.S() >= th.none_below ? worst_rank(w) : -1);
  CauseInput in;
  in.model = &m;
  in.what_if = &w;
  in.seq = seq;
  in.worst_count.assign(static_cast<size_t>(m.world), 0);
  for (int r : *history) {
    if (r < 0) continue;
    ++in.worst_count[static_cast<size_t>(r)];
    ++in.straggling_steps;
  }
  return classify(in, th);
}

TEST(OnlineSlowdownMetrics, SameAnswersAsTheLaneOracleOnSyntheticJobs) {
  int automatic_boundary = 0, straggling_steps = 0;
  for (const Case& c : cases()) {
    const auto run = testing::run_synthetic(c.job, 8);
    Pipeline p;
    p.boundary.set_unit_method(UnitMethod::kBoundary);
    for (const auto& step : run.steps) {
      std::vector<const runtime::StepSummary*> by_rank;
      for (const auto& s : step) by_rank.push_back(&s);
      std::string error;
      const auto model = build_step_model(by_rank, ModelOptions{}, &error);
      ASSERT_TRUE(model) << c.name << ": " << error;
      p.window.push(collect_samples(*model));
      p.seq.push(*model);
      const Ideals ideals = p.window.ideals(*model);
      const SlowdownMetrics oracle = testing::lane_oracle_metrics(*model, ideals, 0.03, true);
      SlowdownMetrics fast, forced;
      p.automatic.compute(*model, ideals, 0.03, true, &fast);
      p.boundary.compute(*model, ideals, 0.03, true, &forced);
      const std::string where = c.name + " step " + std::to_string(model->step);
      expect_same_metrics(fast, oracle, where);
      expect_same_metrics(forced, oracle, where + " (boundary method)");
      automatic_boundary += p.automatic.work().dp.boundary;
      straggling_steps += oracle.S() >= 1.05;
      const CauseResult a = cause_of(*model, fast, p.seq.evidence(), &p.worst_new);
      const CauseResult b = cause_of(*model, oracle, p.seq.evidence(), &p.worst_oracle);
      EXPECT_EQ(a.cause, b.cause) << where;
      EXPECT_EQ(a.worst, b.worst) << where;
      EXPECT_EQ(a.top_op, b.top_op) << where;
    }
  }
  // The product picks the boundary method where it is cheaper (the larger data-parallel jobs
  // here) and full replays elsewhere; both paths are compared above.
  EXPECT_GE(automatic_boundary, 8 * 2);
  EXPECT_LE(automatic_boundary, 8 * 6);
  EXPECT_GE(straggling_steps, 8 * 4) << "too few steps with stragglers to test the causes";
}

TEST(OnlineSlowdownMetrics, BothUnitMethodsGiveTheSameMetrics) {
  for (const Case& c : cases()) {
    const auto run = testing::run_synthetic(c.job, 3);
    IdealWindow window{IdealConfig{}};
    SlowdownAnalysis boundary, full;
    boundary.set_unit_method(UnitMethod::kBoundary);
    full.set_unit_method(UnitMethod::kFullReplays);
    for (const auto& step : run.steps) {
      std::vector<const runtime::StepSummary*> by_rank;
      for (const auto& s : step) by_rank.push_back(&s);
      std::string error;
      const auto model = build_step_model(by_rank, ModelOptions{}, &error);
      ASSERT_TRUE(model) << error;
      window.push(collect_samples(*model));
      const Ideals ideals = window.ideals(*model);
      SlowdownMetrics a, b;
      boundary.compute(*model, ideals, 0.03, false, &a);
      full.compute(*model, ideals, 0.03, false, &b);
      ASSERT_TRUE(boundary.work().dp.boundary && boundary.work().stage.boundary);
      ASSERT_FALSE(full.work().dp.boundary || full.work().stage.boundary);
      expect_same_metrics(a, b, c.name + " step " + std::to_string(model->step));
    }
  }
}

}  // namespace
}  // namespace sp::online
