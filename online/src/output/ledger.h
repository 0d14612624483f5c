// The ledger (issue 25): what each culprit cost the job, in GPU-seconds.
//
// Per analysed step, the time lost is (time_s - ideal_s) x the job's GPU count (one GPU per
// rank; a CPU rank counts as one), >= 0: the measured step against its straggler-free replay.
// It is charged whole to the step's cause ("unattributed" when the verdict named none), so that
// by_cause sums to the loss. The named culprit (the verdict's rank or stage) is charged what
// fixing it alone would give back, its what-if share (`fix_gain_s`, named_fix_gain_s below):
// not the whole loss, since a step with a slow rank is also slowed by the job's jitter, which
// no fix of that rank recovers. That share is what the by-host, by-stage and by-rank totals
// and rank 0's closing line add up, and what a user acting on a host gets back.
//
// Bounded: the totals are per cause, host, stage and rank, never per step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/slowdown_metrics.h"
#include "straggler_probe/online/rank_table.h"
#include "straggler_probe/online/verdict.h"

namespace sp::online {

// One step's entry: its JSONL "lost" object.
struct StepLoss {
  double gpu_s = 0;           // (time - ideal) x gpus, >= 0
  int gpus = 0;
  std::string cause;          // the step's cause, "none" when it named none
  Culprit target;             // the rank or stage named; none when none is
  std::string host;           // the named rank's host ("" when not known)
  int gpu = -1;               // the named rank's GPU (-1: none or not known)
  int stage = -1;             // the named stage, or the named rank's stage (-1: none)
  int rank = -1;              // the named rank (-1: none)
  double fix_gain_gpu_s = 0;  // what fixing the named culprit gives back, <= gpu_s
};

// Seconds of this step that fixing the verdict's named culprit alone would give back: a rank,
// its dp rank's fix-only gain (SlowdownMetrics::dp_fix_gain, x the ideal step); a stage, its
// fix-only share of the slowdown (fix_stage_share, x (T - T_ideal)). 0 when none is named.
double named_fix_gain_s(const SlowdownMetrics& m, const StepVerdict& v);

StepLoss step_loss(const StepVerdict& v);
nlohmann::ordered_json step_loss_json(const StepLoss& l);

class Ledger {
 public:
  void add(const StepVerdict& v);
  uint64_t steps() const { return steps_; }
  // report.json's "lost" section.
  nlohmann::ordered_json to_json() const;
  // "lost 3.2% of GPU time (1.2 of 38.4 GPU-h, 120 steps): 2.1% worker on node-17 gpu 3 (rank 5),
  // 0.8% stage-imbalance stage 7; fixing them gives back 2.9%" ("" before any analysed step).
  std::string text() const;

  static constexpr size_t kTopRanks = 10;
  static constexpr size_t kLineCulprits = 4;

 private:
  struct RankLoss {
    std::string host;
    int gpu = -1;
    double gpu_s = 0;
  };
  struct CulpritLoss {
    std::string cause;
    Culprit target;
    std::string host;
    int gpu = -1;
    double gpu_s = 0;
  };
  uint64_t steps_ = 0;
  int gpus_ = 0;
  double gpu_seconds_ = 0, lost_ = 0, fixable_ = 0;
  std::map<std::string, double> by_cause_, by_host_, by_stage_;
  std::map<int, RankLoss> by_rank_;
  std::map<std::string, CulpritLoss> culprits_;  // key: cause + " " + target.text()
};

// exclude_hosts.txt: the hosts behind open worker alarms (report.json's "alarms": cause worker,
// not cleared; target rank:N through the rank table, or host:NAME), one per line, sorted, for
// Slurm's --exclude. Only names of hostname characters ([A-Za-z0-9._-]) are written. "" when none.
std::string exclude_hosts_text(const nlohmann::ordered_json& alarms, const RankTable& ranks);

}  // namespace sp::online
