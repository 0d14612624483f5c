// Per trace row: the real and the simulated ideal start/end, for timelines of real vs ideal.
#include <algorithm>
#include <limits>

#include "analysis_state.h"
#include "trace/step_index.h"

namespace sp::whatif {

void init_row_times(AnalysisResult& r, size_t num_rows) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.row_real_start.assign(num_rows, nan);
  r.row_real_end.assign(num_rows, nan);
  r.row_ideal_start.assign(num_rows, nan);
  r.row_ideal_end.assign(num_rows, nan);
  r.row_analysed.assign(num_rows, 0);
}

// The ideal times of the analysed cells, scattered to their trace rows.
void fill_ideal_row_times(AnalysisResult& r, const LaneModel& analysed,
                     const std::vector<double>& ideal_start, const std::vector<double>& ideal_end) {
  const size_t num_rows = r.row_analysed.size();
  const int64_t* cell_row = analysed.cell_row.data();
  double* out_start = r.row_ideal_start.data();
  double* out_end = r.row_ideal_end.data();
  uint8_t* out_analysed = r.row_analysed.data();
  for (size_t c = 0; c < analysed.cell_row.size(); ++c) {
    const auto row = static_cast<size_t>(cell_row[c]);
    if (row >= num_rows) continue;  // also -1: not from a trace row
    out_start[row] = ideal_start[c];
    out_end[row] = ideal_end[c];
    out_analysed[row] = 1;
  }
}

// Real times relative to the step's first start, straight from the trace (float32, as the
// model computes them).
void fill_real_row_times(AnalysisResult& r, const TraceTable& t) {
  const StepIndex index(t.step);
  std::vector<float> step_min(index.steps().size(), std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < t.size(); ++i) {
    float& m = step_min[index(t.step[i])];
    m = std::min(m, static_cast<float>(t.start_ts[i]));
  }
  double* out_start = r.row_real_start.data();
  double* out_end = r.row_real_end.data();
  for (size_t i = 0; i < t.size(); ++i) {
    const float origin = step_min[index(t.step[i])];
    const auto start = static_cast<float>(t.start_ts[i]);
    const float end = start + static_cast<float>(t.duration[i]);
    out_start[i] = static_cast<double>(start - origin);
    out_end[i] = static_cast<double>(end - origin);
  }
}

void fill_real_row_times(AnalysisResult& r, const LaneModel& m) {
  const size_t num_rows = r.row_analysed.size();
  for (size_t c = 0; c < m.cell_row.size(); ++c) {
    const int64_t row = m.cell_row[c];
    if (row < 0 || static_cast<size_t>(row) >= num_rows) continue;
    r.row_real_start[static_cast<size_t>(row)] = static_cast<double>(m.real_start[c]);
    r.row_real_end[static_cast<size_t>(row)] = static_cast<double>(m.real_end[c]);
  }
}

size_t trace_rows_of(const LaneModel& m) {
  int64_t mx = -1;
  for (int64_t r : m.cell_row) mx = std::max(mx, r);
  return static_cast<size_t>(mx + 1);
}

}  // namespace sp::whatif
