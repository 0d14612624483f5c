// The analysis pipeline of the artifact's wia.py, compute_ms.py and compute_mw.py:
// 1. base: the traced step times;
// 2. no-delay: replay with the real durations and no launch delays;
// 3. ideal: replay with every op at its op type's typical duration;
// 4. attributions (when the slowdown reaches the threshold);
// 5. M_S / M_W on demand.
// Where the artifact reads durations back from a replayed timeline (end - start), so do we:
// the later replays use those values, not the inputs.
#include "straggler_probe/whatif/analyzer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "analysis_state.h"
#include "pandas_numerics.h"
#include "step_index.h"

namespace sp::whatif {
namespace {

std::vector<StepValue> descending(const std::vector<int64_t>& steps, const std::vector<double>& v) {
  std::vector<StepValue> out;
  for (size_t s = 0; s < steps.size(); ++s) out.push_back({steps[s], v[s]});
  // pandas sort_values(ascending=False); equal values keep step order.
  std::stable_sort(out.begin(), out.end(),
                   [](const StepValue& a, const StepValue& b) { return a.value > b.value; });
  return out;
}

std::vector<StepValue> ascending(const std::vector<int64_t>& steps, const std::vector<double>& v) {
  std::vector<StepValue> out;
  for (size_t s = 0; s < steps.size(); ++s) out.push_back({steps[s], v[s]});
  return out;
}

LaneModel restrict_steps(LaneModel model, const AnalyzeOptions& opts) {
  std::vector<int64_t> keep;
  for (int64_t s : *opts.steps) {
    if (std::binary_search(model.steps.begin(), model.steps.end(), s)) keep.push_back(s);
  }
  if (keep.empty()) {
    throw ModelError("none of the requested steps is in the trace (its steps are " +
                     std::to_string(model.steps.front()) + " to " +
                     std::to_string(model.steps.back()) + ")");
  }
  return select_steps(model, keep);
}

}  // namespace

Analysis::State::State(LaneModel m, AnalyzeOptions opts)
    : options(std::move(opts)), model(std::move(m)), sim(model.graph, model.lanes) {
  const size_t N = model.graph.num_nodes();
  const size_t L = model.lanes.num_lanes();
  const size_t S = model.steps.size();
  const size_t cells = N * L;
  num_lanes = L;
  is_comm.reserve(N);
  for (size_t v = 0; v < N; ++v) {
    is_comm.push_back(model.graph.node(static_cast<NodeId>(v)).kind == NodeKind::kComm ? 1 : 0);
  }

  work_base.resize(cells);
  for (size_t v = 0; v < N; ++v) {
    const float* src = is_comm[v] ? model.transfer.data() : model.duration.data();
    for (size_t c = v * L; c < (v + 1) * L; ++c) work_base[c] = static_cast<double>(src[c]);
  }

  AnalysisResult& r = result;
  r.steps = model.steps;
  r.dp_size = model.dp_size;
  r.pp_size = model.pp_size;

  // 1. Traced step times: float32, like the artifact's shifted columns.
  std::vector<float> base32(S);
  for (size_t s = 0; s < S; ++s) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (size_t v = 0; v < N; ++v) {
      for (size_t l = s * static_cast<size_t>(model.dp_size); l < (s + 1) * static_cast<size_t>(model.dp_size); ++l) {
        lo = std::min(lo, model.real_start[v * L + l]);
        hi = std::max(hi, model.real_end[v * L + l]);
      }
    }
    base32[s] = hi - lo;
  }

  // 2. No launch delays.
  {
    SimInput in;
    in.work = work_base;
    in.want_span = true;
    const SimResult res = sim.run(in);
    span_nodelay.resize(S);
    sim_nodelay.resize(S);
    for (size_t s = 0; s < S; ++s) {
      span_nodelay[s] = res.span_end[s] - res.span_start[s];
      sim_nodelay[s] = res.step_end[s];
    }
    work_nodelay.resize(cells);
    for (size_t v = 0; v < N; ++v) {
      for (size_t c = v * L; c < (v + 1) * L; ++c) {
        work_nodelay[c] = is_comm[v] ? work_base[c] : res.end[c] - res.start[c];
      }
    }
    // 3. The ideal durations come from this timeline.
    compute_ideal_work(model, is_comm, res.start, res.end, work_ideal);
  }
  std::vector<double> base64(base32.begin(), base32.end());
  r.step_t_base = ascending(model.steps, base64);
  r.step_t_nodelay = ascending(model.steps, span_nodelay);
  std::vector<double> launch_ratio(S);
  for (size_t s = 0; s < S; ++s) launch_ratio[s] = base64[s] / sim_nodelay[s];
  r.launch_step_slowdown = descending(model.steps, launch_ratio);
  r.launch_slowdown = static_cast<double>(pandas_series_mean(std::span<const float>(base32))) /
                      pandas_series_mean(std::span<const double>(sim_nodelay));

  {
    SimInput in;
    in.work = work_ideal;
    in.want_span = true;
    const SimResult res = sim.run(in);
    span_ideal.resize(S);
    sim_ideal.resize(S);
    for (size_t s = 0; s < S; ++s) {
      span_ideal[s] = res.span_end[s] - res.span_start[s];
      sim_ideal[s] = res.step_end[s];
    }
    sim.release_cells(ideal_start, ideal_end);
    // Later replays start from the ideal timeline's own durations.
    for (size_t c = 0; c < cells; ++c) {
      if (!is_comm[c / L]) work_ideal[c] = ideal_end[c] - ideal_start[c];
    }
  }
  r.step_t_noblk = ascending(model.steps, span_ideal);
  std::vector<double> blocking_ratio(S);
  for (size_t s = 0; s < S; ++s) blocking_ratio[s] = span_nodelay[s] / sim_ideal[s];
  r.blocking_step_slowdown = descending(model.steps, blocking_ratio);
  r.blocking_slowdown = pandas_series_mean(std::span<const double>(span_nodelay)) /
                        pandas_series_mean(std::span<const double>(sim_ideal));

  // 4. Attributions, per step in the order of the step slowdowns (or of the artifact's
  // step set when steps were chosen).
  const auto target = [&](const std::vector<StepValue>& order) {
    if (options.steps) return python_step_set_order(*options.steps, model.steps);
    std::vector<int64_t> t;
    for (const auto& sv : order) t.push_back(sv.step);
    return t;
  };
  if (!(r.launch_slowdown < options.decompose_threshold)) {
    launch_base.assign(model.launch_delay.begin(), model.launch_delay.end());
    zeros.assign(cells, 0.0);
    decompose_all(*this, true, target(r.launch_step_slowdown));
  }
  if (!(r.blocking_slowdown < options.decompose_threshold)) {
    decompose_all(*this, false, target(r.blocking_step_slowdown));
  }

  if (r.blocking_by_dp_rank && r.blocking_by_stage) {
    std::vector<double> by_dp(static_cast<size_t>(model.dp_size)), by_stage(static_cast<size_t>(model.pp_size));
    for (const auto& g : r.blocking_by_dp_rank->overall) by_dp[std::stoul(g.key)] = g.value;
    for (const auto& g : r.blocking_by_stage->overall) by_stage[std::stoul(g.key)] = g.value;
    r.worker_slowdown.resize(by_dp.size() * by_stage.size());
    for (size_t s = 0; s < by_stage.size(); ++s) {
      for (size_t d = 0; d < by_dp.size(); ++d) {
        r.worker_slowdown[s * by_dp.size() + d] = std::min(by_dp[d], by_stage[s]);
      }
    }
  }
}

namespace {

void init_rows(AnalysisResult& r, size_t num_rows) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.row_real_start.assign(num_rows, nan);
  r.row_real_end.assign(num_rows, nan);
  r.row_ideal_start.assign(num_rows, nan);
  r.row_ideal_end.assign(num_rows, nan);
  r.row_analysed.assign(num_rows, 0);
}

// The ideal times of the analysed cells, scattered to their trace rows.
void fill_ideal_rows(AnalysisResult& r, const LaneModel& analysed,
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
void fill_real_rows(AnalysisResult& r, const TraceTable& t) {
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

void fill_real_rows(AnalysisResult& r, const LaneModel& m) {
  const size_t num_rows = r.row_analysed.size();
  for (size_t c = 0; c < m.cell_row.size(); ++c) {
    const int64_t row = m.cell_row[c];
    if (row < 0 || static_cast<size_t>(row) >= num_rows) continue;
    r.row_real_start[static_cast<size_t>(row)] = static_cast<double>(m.real_start[c]);
    r.row_real_end[static_cast<size_t>(row)] = static_cast<double>(m.real_end[c]);
  }
}

size_t rows_of(const LaneModel& m) {
  int64_t mx = -1;
  for (int64_t r : m.cell_row) mx = std::max(mx, r);
  return static_cast<size_t>(mx + 1);
}

}  // namespace

Analysis::Analysis(const TraceTable& trace, const JobMeta& meta, AnalyzeOptions options) {
  LaneModel model = build_megatron_model(trace, meta);
  if (options.steps) model = restrict_steps(std::move(model), options);
  state_ = std::make_unique<State>(std::move(model), options);
  State& st = *state_;
  st.result.job_meta = meta;
  init_rows(st.result, trace.size());
  fill_real_rows(st.result, trace);
  fill_ideal_rows(st.result, st.model, st.ideal_start, st.ideal_end);
}

Analysis::Analysis(LaneModel model, const JobMeta& meta, AnalyzeOptions options) {
  const size_t rows = rows_of(model);
  AnalysisResult partial;
  init_rows(partial, rows);
  fill_real_rows(partial, model);
  if (options.steps) model = restrict_steps(std::move(model), options);
  state_ = std::make_unique<State>(std::move(model), options);
  State& st = *state_;
  st.result.job_meta = meta;
  st.result.row_real_start = std::move(partial.row_real_start);
  st.result.row_real_end = std::move(partial.row_real_end);
  st.result.row_ideal_start = std::move(partial.row_ideal_start);
  st.result.row_ideal_end = std::move(partial.row_ideal_end);
  st.result.row_analysed = std::move(partial.row_analysed);
  fill_ideal_rows(st.result, st.model, st.ideal_start, st.ideal_end);
}

Analysis::~Analysis() = default;
Analysis::Analysis(Analysis&&) noexcept = default;
Analysis& Analysis::operator=(Analysis&&) noexcept = default;

const AnalysisResult& Analysis::result() const { return state_->result; }
const LaneModel& Analysis::model() const { return state_->model; }

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

AnalysisResult analyze(const TraceTable& trace, const JobMeta& meta, const AnalyzeOptions& options) {
  return Analysis(trace, meta, options).result();
}

}  // namespace sp::whatif
