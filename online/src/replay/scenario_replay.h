// Replays one what-if scenario of a step over the whole graph (replay_plan.h): one pass in
// replay order, one lane. The buffers are kept from one run (and one step) to the next.
#pragma once

#include <vector>

#include "replay_plan.h"
#include "scenario_values.h"

namespace sp::online {

class ScenarioReplay {
 public:
  // Replays `selection`; returns the step time: the longest rank's (step-end marker's end -
  // step start's start), as the measured step is defined.
  double run(const ReplayPlan& plan, const PlanValues& values, const Selection& selection);

  // Per position, of the last run.
  const std::vector<double>& start() const { return start_; }
  const std::vector<double>& end() const { return end_; }

 private:
  std::vector<double> start_, end_;
};

// The step time of a replay given its per-position start and end times.
double replay_step_time(const ReplayPlan& plan, const std::vector<double>& start,
                        const std::vector<double>& end);

}  // namespace sp::online
