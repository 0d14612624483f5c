// The jitter a null draw replays with (SlowdownAnalysis::null_draw): per op key of a step
// model, the spread of its duration and of its launch delay. The noise model (decision/
// noise_model.h) learns it from the job's recent steps; the replay only reads it.
#pragma once

#include <vector>

namespace sp::online {

struct NoiseSpread {
  std::vector<double> work_sigma;   // per StepModel::ideal_keys: sd of log(duration); 0: none
  std::vector<double> delay_sigma;  // per StepModel::delay_keys: sd of the launch delay (s)
};

}  // namespace sp::online
