// Several what-if scenarios of a step replayed in one pass over the plan (replay_plan.h): each
// position's dependencies and values are read once for all of them, and the scenarios' times
// sit side by side ([position][lane]), so that the pass streams through memory. Same arithmetic
// as ScenarioReplay (scenario_replay.h), so the same step times bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "replay_plan.h"
#include "scenario_values.h"

namespace sp::online {

class LaneBatch {
 public:
  // The step time of each selection, in order, into *step_times. Buffers are kept.
  void run(const ReplayPlan& plan, const PlanValues& values, const std::vector<Selection>& lanes,
           std::vector<double>* step_times);

  // Passes over the plan so far (for the benchmark).
  size_t passes() const { return passes_; }

 private:
  template <int L>
  void pass(const ReplayPlan& plan, const PlanValues& values, const Selection* lanes, int count,
            double* step_times);

  std::vector<double> end_;          // [position][lane]
  std::vector<uint8_t> rank_code_;   // [rank][lane]: bit 0 recorded work, bits 1-2 delay mode
  std::vector<uint8_t> type_code_;   // [type slot][lane]: 1 recorded work
  size_t passes_ = 0;
};

}  // namespace sp::online
