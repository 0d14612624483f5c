// Internal: what an Analysis keeps between result.json and the M_S / M_W simulations.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/simulator.h"

namespace sp::whatif {

struct Analysis::State {
  AnalyzeOptions options;
  LaneModel model;  // restricted to the analysed steps
  Simulator sim;
  size_t num_lanes = 0;
  std::vector<uint8_t> is_comm;  // per node

  // Per cell, the simulator's "work" (comm: transfer duration; compute: duration) of:
  std::vector<double> work_base;     // the trace (float32 values)
  std::vector<double> work_nodelay;  // the no-delay timeline, durations read back from it
  std::vector<double> work_ideal;    // the ideal timeline, durations read back from it
  std::vector<double> launch_base;   // the trace's launch delays
  std::vector<double> zeros;         // per cell

  // Per step.
  std::vector<double> span_nodelay, sim_nodelay;  // step span / simulator step time
  std::vector<double> span_ideal, sim_ideal;
  std::vector<double> ideal_start, ideal_end;     // per cell, the ideal timeline

  AnalysisResult result;

  State(LaneModel m, AnalyzeOptions opts);
};

// The ideal work of every cell: per op type, the mean (compute) or median (communication) over
// all cells of the no-delay timeline (`start`, `end` per cell), with the artifact's dtypes.
void compute_ideal_work(const LaneModel& model, const std::vector<uint8_t>& is_comm,
                        std::span<const double> start, std::span<const double> end,
                        std::vector<double>& work_ideal);

// Attribution by dp rank, stage and op type. `launch` selects the launch-delay variant.
void decompose_all(Analysis::State& st, bool launch, const std::vector<int64_t>& target_steps);

// The artifact's explain_slowdown for the cells selected by `cell_mask` (per cell, node-major).
SlowdownExplanation explain_slowdown(Analysis::State& st, const std::vector<uint8_t>& cell_mask);

// Per-row times (row_times.cpp): NaN-initialised arrays for `num_rows` rows; the real times
// from the trace (or from the model's cells); the ideal times of the analysed cells.
void init_row_times(AnalysisResult& r, size_t num_rows);
void fill_real_row_times(AnalysisResult& r, const TraceTable& trace);
void fill_real_row_times(AnalysisResult& r, const LaneModel& model);
void fill_ideal_row_times(AnalysisResult& r, const LaneModel& analysed,
                          const std::vector<double>& ideal_start, const std::vector<double>& ideal_end);
// Number of trace rows a model's cells refer to.
size_t trace_rows_of(const LaneModel& model);

// Iteration order of the Python set the artifact builds for --step (its per-step attributions
// follow it).
std::vector<int64_t> python_step_set_order(const std::vector<int64_t>& requested,
                                           const std::vector<int64_t>& trace_steps);

}  // namespace sp::whatif
