// The analysis of one complete step: op model -> ideal window -> what-if metrics -> cause rules
// -> verdict, with what carries from step to step (the ideal and sequence windows, how often
// each rank was the worst, the timeline of the last steps, the metrics' buffers, the CPU
// budget). OnlineAnalyzer (analyzer.cpp) decides when a step is complete and calls it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "cpu_budget.h"
#include "decision/hang_rule.h"
#include "ideal/ideal_window.h"
#include "decision/noise_verdict.h"
#include "output/report_writer.h"
#include "model/seq_evidence.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model.h"
#include "straggler_probe/online/analyzer.h"

namespace sp::online {

class StepAnalysis {
 public:
  explicit StepAnalysis(const OnlineConfig& config);

  struct Outcome {
    StepVerdict verdict;    // the step's verdict, when skip_kind is empty
    std::string skip_kind;  // else why it was not analysed ("malformed", "cpu budget")
    std::string skip_reason;
  };
  // by_rank: one summary per rank. Throws only on unexpected failures (the caller counts them).
  Outcome analyze(int64_t step, const std::vector<const runtime::StepSummary*>& by_rank,
                  int64_t now_ns, OnlineStats* stats);

  // Work owed by the step just analysed, done once its line is out (the noise model's pool fill
  // after the first step: NoiseVerdict::owes_draws); charged to the CPU budget like the step.
  // The driver calls it after the line; analyze() calls it first in any case, so that the next
  // step never sees the pool unfilled.
  void settle(OnlineStats* stats);
  bool owes_work() const { return owing_model_.has_value(); }

  const std::deque<TimelineStep>& timeline() const { return timeline_; }
  // report.json's "alarms" (always a list).
  nlohmann::ordered_json alarms_json() const { return noise_.alarms_json(); }
  void set_levels(double alpha, double alarm_alpha) { noise_.set_levels(alpha, alarm_alpha); }

 private:
  StepVerdict verdict(int64_t step, const StepModel& model) const;
  int judge(const StepModel& model, const Ideals& ideals, StepVerdict* v);
  int name_hang(const HangFinding& hang, StepVerdict* v);
  void forget_step();
  void remember_step_time(double seconds);
  double typical_step_s() const;
  double hang_bound() const;
  void classify_step(const StepModel& model, const SeqEvidence& seq, StepVerdict* v);
  static int named_rank(const StepVerdict& v);
  void remember_worst(int rank);
  void record_timeline(int64_t step, const StepModel& model, const StepVerdict& v);

  const OnlineConfig& cfg_;
  IdealWindow window_;
  SeqWindow seq_;
  SlowdownAnalysis slowdown_;  // keeps its buffers from step to step
  SlowdownMetrics metrics_;
  NoiseVerdict noise_;
  uint64_t hang_episode_used_ = 0;  // the hang watch's last episode a hang step took
  std::deque<double> step_times_;   // recent analysed steps' times, hang steps left out
  std::deque<int> worst_history_;  // per analysed step: the named rank, or -1 when none
  std::deque<TimelineStep> timeline_;
  CpuBudget budget_;
  std::optional<StepModel> owing_model_;  // the step whose owed work settle() does
};

}  // namespace sp::online
