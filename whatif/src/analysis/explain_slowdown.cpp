// The artifact's explain_slowdown, behind M_S and M_W: how much of the gap between the no-delay
// timeline (tori) and the ideal (tideal) a set of cells accounts for, by fixing only them
// (trem) and by un-fixing only them (tadd). Step times here are step spans (first start to
// last end of any op), as the artifact measures them on its data frames. M_S fixes the last
// pipeline stage, M_W the top 3% of workers by S_w.
#include <algorithm>

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

SlowdownExplanation Analysis::compute_ms() {
  State& st = *state_;
  const LaneModel& m = st.model;
  const size_t L = st.num_lanes;
  const int32_t last = m.pp_size - 1;
  std::vector<uint8_t> mask(m.num_cells(), 0);
  for (size_t v = 0; v < m.graph.num_nodes(); ++v) {
    if (m.node_stage[v] == last) std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(v * L), L, 1);
  }
  SlowdownExplanation e = explain_slowdown(st, mask);
  e.fixed_stages = {last};
  return e;
}

std::optional<SlowdownExplanation> Analysis::compute_mw() {
  State& st = *state_;
  const AnalysisResult& r = st.result;
  if (r.worker_slowdown.empty()) return std::nullopt;
  const LaneModel& m = st.model;
  const size_t L = st.num_lanes;
  const auto dp = static_cast<size_t>(m.dp_size);
  // The top ceil(3% of the traced workers) by S_w; ties go to the lower rank.
  struct Worker {
    int32_t rank, stage, dp_rank;
    double score;
  };
  std::vector<Worker> workers;
  for (int32_t s = 0; s < m.pp_size; ++s) {
    for (int32_t d = 0; d < m.dp_size; ++d) {
      workers.push_back({m.rank_of(s, d), s, d, r.worker_slowdown[static_cast<size_t>(s) * dp + static_cast<size_t>(d)]});
    }
  }
  std::sort(workers.begin(), workers.end(), [](const Worker& a, const Worker& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.rank < b.rank;
  });
  const size_t n = (workers.size() * 3 + 99) / 100;
  std::vector<uint8_t> mask(m.num_cells(), 0);
  SlowdownExplanation top;
  for (size_t i = 0; i < n; ++i) {
    const Worker& w = workers[i];
    top.fixed_ranks.push_back(w.rank);
    for (size_t v = 0; v < m.graph.num_nodes(); ++v) {
      if (m.node_stage[v] != w.stage) continue;
      for (size_t l = static_cast<size_t>(w.dp_rank); l < L; l += dp) mask[v * L + l] = 1;
    }
  }
  SlowdownExplanation e = explain_slowdown(st, mask);
  e.fixed_ranks = top.fixed_ranks;
  return e;
}

}  // namespace sp::whatif
