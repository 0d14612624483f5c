// Several what-if scenarios of a step replayed in one pass over the plan (replay_plan.h): each
// position's dependencies and values are read once for all of them, and the scenarios' times
// sit side by side ([position][lane]), so that the pass streams through memory. Same arithmetic
// as ScenarioReplay (scenario_replay.h), so the same step times bit for bit.
//
// The scenarios of a batch have one shape, which is every batched scenario of the analysis: a
// default side for all positions but those of one class (an op type, a unit of ranks), which
// take another side ("ideal, but op type t recorded", "ideal, but stage p recorded").
#pragma once

#include <cstdint>
#include <vector>

#include "replay_plan.h"
#include "scenario_values.h"

namespace sp::online {

class LaneBatch {
 public:
  struct Lane {
    ValueSide others;     // positions whose class is not `cls`
    int32_t cls = -1;     // -1: every position takes `others`
    ValueSide own;        // positions of class `cls`
  };

  // The step time of each lane, in order, into *step_times; class_at: per position its class.
  // Buffers are kept from one run to the next.
  void run(const ReplayPlan& plan, const PlanValues& values, const std::vector<int32_t>& class_at,
           const std::vector<Lane>& lanes, std::vector<double>* step_times);

 private:
  template <int L, bool kOneSide>
  void pass(const ReplayPlan& plan, const PlanValues& values, const int32_t* class_at,
            const Lane* lanes, int count, double* step_times);

  void order_lanes(const std::vector<Lane>& lanes);

  std::vector<double> end_;  // [position][lane]
  // order_lanes: the lanes' replay order (indices into run()'s lanes) and the lanes in it;
  // the distinct pairs of sides with their lanes; the times in replay order.
  std::vector<size_t> order_;
  std::vector<Lane> ordered_;
  std::vector<std::vector<size_t>> side_lanes_;
  std::vector<double> times_;
};

}  // namespace sp::online
