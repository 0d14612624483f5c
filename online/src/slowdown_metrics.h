// The what-if scenarios of one step, replayed together as lanes of one simulator run: real,
// no launch delays, ideal, and "ideal except one group put back" for each op type, dp rank and
// stage; then the fix-only scenarios behind M_S and M_W.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ideal_window.h"
#include "step_model.h"

namespace sp::online {

struct WhatIfResult {
  double T_real = 0, T_nodelay = 0, T_ideal = 0;
  // The step's slowdown S = T_real / T_ideal (1 when the ideal replay took no time), and the
  // share of the real step that launch delays (host gaps) take.
  double S() const { return T_ideal > 0 ? T_real / T_ideal : 1.0; }
  double launch_share() const { return T_real > 0 ? (T_real - T_nodelay) / T_real : 0.0; }
  std::vector<std::pair<std::string, double>> op_S;  // by type, plus "launch-delay"
  std::vector<double> dp_S, stage_S, worker_S;       // worker_S per rank
  std::vector<double> fix_stage_share;  // per stage: share of the slowdown fixing it recovers
  double M_S = 0, M_W = 0;
  std::vector<int> top_workers;
  // Per node, seconds since t0: replay with real values and with ideal values (for timelines).
  std::vector<double> real_start, real_end, ideal_start, ideal_end;
};

// Throws whatif::GraphError when the graph has a cycle.
WhatIfResult run_what_if(const StepModel& model, const Ideals& ideals, double top_fraction,
                         bool want_timeline);

}  // namespace sp::online
