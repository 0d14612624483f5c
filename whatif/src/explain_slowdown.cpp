// The artifact's explain_slowdown, behind M_S and M_W: how much of the gap between the no-delay
// timeline (tori) and the ideal (tideal) a set of cells accounts for, by fixing only them
// (trem) and by un-fixing only them (tadd). Step times here are step spans (first start to
// last end of any op), as the artifact measures them on its data frames.
#include "analysis_state.h"
#include "pandas_numerics.h"

namespace sp::whatif {
namespace {

double mean_span(Analysis::State& st, const std::vector<double>& base,
                 const std::vector<double>& alt, const std::vector<uint8_t>& cell_mask) {
  SimOverlay ov;
  ov.work = alt;
  ov.cell_mask = cell_mask;
  SimInput in;
  in.work = base;
  in.overlay = &ov;
  in.want_span = true;
  in.want_cells = false;
  const SimResult r = st.sim.run(in);
  std::vector<double> span(r.step_end.size());
  for (size_t s = 0; s < span.size(); ++s) span[s] = r.span_end[s] - r.span_start[s];
  return pandas_series_mean(std::span<const double>(span));
}

}  // namespace

SlowdownExplanation explain_slowdown(Analysis::State& st, const std::vector<uint8_t>& cell_mask) {
  SlowdownExplanation e;
  e.tori = pandas_series_mean(std::span<const double>(st.span_nodelay));
  e.tideal = pandas_series_mean(std::span<const double>(st.span_ideal));
  e.trem = mean_span(st, st.work_nodelay, st.work_ideal, cell_mask);
  e.tadd = mean_span(st, st.work_ideal, st.work_nodelay, cell_mask);
  e.rem = (e.tori - e.trem) / (e.tori - e.tideal);
  e.add = (e.tadd - e.tideal) / (e.tori - e.tideal);
  return e;
}

}  // namespace sp::whatif
