// The test oracle: the per-step metrics computed the way the product did before it had to scale,
// every scenario (real, ideal, one per op type, per dp rank, per stage, fix-only per stage and
// per dp rank, M_W)
// a lane of the what-if engine's simulator over the whole step (lane_replayer.h). Its cost grows
// with the square of the job, so the tests use it on small jobs only.
#pragma once

#include "ideal/ideal_window.h"
#include "replay/slowdown_metrics.h"
#include "model/step_model.h"

namespace sp::online::testing {

// Throws whatif::GraphError when the graph has a cycle.
SlowdownMetrics lane_oracle_metrics(const StepModel& model, const Ideals& ideals,
                                    double top_fraction, bool want_timeline);

}  // namespace sp::online::testing
