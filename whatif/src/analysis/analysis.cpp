// The analysis pipeline of the artifact's wia.py, compute_ms.py and compute_mw.py:
// 1. base: the traced step times;
// 2. no-delay: replay with the real durations and no launch delays;
// 3. ideal: replay with every op at its op type's typical duration;
// 4. attributions (when the slowdown reaches the threshold);
// 5. M_S / M_W on demand.
// Where the artifact reads durations back from a replayed timeline (end - start), so do we:
// the later replays use those values, not the inputs.
#include "straggler_probe/whatif/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "analysis_state.h"
#include "pandas_numerics.h"

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

// Replays `work` (no launch delays) and keeps, per step, its span as a trace would show it and
// the simulated step end. The result's views stay valid until the simulator's next run.
SimResult replay_steps(Simulator& sim, std::span<const double> work, size_t num_steps, std::vector<double>& span,
                       std::vector<double>& step_end) {
  SimInput in;
  in.work = work;
  in.want_span = true;
  const SimResult res = sim.run(in);
  span.resize(num_steps);
  step_end.resize(num_steps);
  for (size_t s = 0; s < num_steps; ++s) {
    span[s] = res.span_end[s] - res.span_start[s];
    step_end[s] = res.step_end[s];
  }
  return res;
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

// Traced step times: float32, like the artifact's shifted columns.
std::vector<float> traced_step_times(const LaneModel& model) {
  const size_t N = model.graph.num_nodes();
  const size_t L = model.lanes.num_lanes();
  const auto dp = static_cast<size_t>(model.dp_size);
  std::vector<float> base32(model.steps.size());
  for (size_t s = 0; s < base32.size(); ++s) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (size_t v = 0; v < N; ++v) {
      for (size_t l = s * dp; l < (s + 1) * dp; ++l) {
        lo = std::min(lo, model.real_start[v * L + l]);
        hi = std::max(hi, model.real_end[v * L + l]);
      }
    }
    base32[s] = hi - lo;
  }
  return base32;
}

// S_w = min(S of its dp rank, S of its stage), [stage * dp_size + dp_rank].
std::vector<double> worker_slowdowns(const AnalysisResult& r) {
  std::vector<double> by_dp(static_cast<size_t>(r.dp_size)), by_stage(static_cast<size_t>(r.pp_size));
  for (const auto& g : r.blocking_by_dp_rank->overall) by_dp[std::stoul(g.key)] = g.value;
  for (const auto& g : r.blocking_by_stage->overall) by_stage[std::stoul(g.key)] = g.value;
  std::vector<double> sw(by_dp.size() * by_stage.size());
  for (size_t s = 0; s < by_stage.size(); ++s) {
    for (size_t d = 0; d < by_dp.size(); ++d) sw[s * by_dp.size() + d] = std::min(by_dp[d], by_stage[s]);
  }
  return sw;
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

  // 1. Traced step times.
  const std::vector<float> base32 = traced_step_times(model);

  // 2. No launch delays.
  {
    const SimResult res = replay_steps(sim, work_base, S, span_nodelay, sim_nodelay);
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
    replay_steps(sim, work_ideal, S, span_ideal, sim_ideal);
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

  if (r.blocking_by_dp_rank && r.blocking_by_stage) r.worker_slowdown = worker_slowdowns(r);
}

Analysis::Analysis(const TraceTable& trace, const JobMeta& meta, AnalyzeOptions options) {
  LaneModel model = build_megatron_model(trace, meta);
  if (options.steps) model = restrict_steps(std::move(model), options);
  state_ = std::make_unique<State>(std::move(model), options);
  State& st = *state_;
  st.result.job_meta = meta;
  init_row_times(st.result, trace.size());
  fill_real_row_times(st.result, trace);
  fill_ideal_row_times(st.result, st.model, st.ideal_start, st.ideal_end);
}

Analysis::Analysis(LaneModel model, const JobMeta& meta, AnalyzeOptions options) {
  const size_t rows = trace_rows_of(model);
  AnalysisResult partial;
  init_row_times(partial, rows);
  fill_real_row_times(partial, model);
  if (options.steps) model = restrict_steps(std::move(model), options);
  state_ = std::make_unique<State>(std::move(model), options);
  State& st = *state_;
  st.result.job_meta = meta;
  st.result.row_real_start = std::move(partial.row_real_start);
  st.result.row_real_end = std::move(partial.row_real_end);
  st.result.row_ideal_start = std::move(partial.row_ideal_start);
  st.result.row_ideal_end = std::move(partial.row_ideal_end);
  st.result.row_analysed = std::move(partial.row_analysed);
  fill_ideal_row_times(st.result, st.model, st.ideal_start, st.ideal_end);
}

Analysis::~Analysis() = default;
Analysis::Analysis(Analysis&&) noexcept = default;
Analysis& Analysis::operator=(Analysis&&) noexcept = default;

const AnalysisResult& Analysis::result() const { return state_->result; }
const LaneModel& Analysis::model() const { return state_->model; }

AnalysisResult analyze(const TraceTable& trace, const JobMeta& meta, const AnalyzeOptions& options) {
  return Analysis(trace, meta, options).result();
}

}  // namespace sp::whatif
