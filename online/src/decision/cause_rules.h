// The cause classifier: from a step's what-if numbers to ONE cause, its worst rank or stage
// and the evidence behind it. All rules and their reasons live in cause_rules.cpp.
#pragma once

#include <string>
#include <vector>

#include "model/seq_evidence.h"
#include "model/step_model.h"
#include "straggler_probe/online/config.h"
#include "straggler_probe/online/verdict.h"
#include "replay/slowdown_metrics.h"

namespace sp::online {

struct CauseInput {
  const StepModel* model = nullptr;
  const SlowdownMetrics* what_if = nullptr;
  SeqEvidence seq;
  // Over the recent analysed steps: how often each rank was the worst one (S above none_below).
  std::vector<int> worst_count;
  int straggling_steps = 0;
};

struct CauseResult {
  Cause cause = Cause::kNone;
  Culprit worst;         // none for cause none
  double worst_S = 1.0;
  std::string top_op;
  std::string evidence;
};

CauseResult classify(const CauseInput& in, const CauseThresholds& th);

// The rank with the largest S_w (lowest rank on ties).
int worst_rank(const SlowdownMetrics& w);

}  // namespace sp::online
