// From a trace to the simulator's layout: the template's dependency model becomes an OpGraph,
// every row becomes a (node, lane) cell, and the artifact's derived columns are computed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "derived_columns.h"
#include "megatron_skeleton.h"
#include "trace/step_index.h"
#include "straggler_probe/whatif/lane_model.h"

namespace sp::whatif {
namespace {

std::string row_where(const TraceTable& t, size_t r) {
  return "rank " + std::to_string(t.rank[r]) + " (dp rank " + std::to_string(t.dp_rank[r]) +
         ", stage " + std::to_string(t.stage[r]) + "), step " + std::to_string(t.step[r]);
}

// The traces store float32; the artifact computes end_ts in float32 too.
TraceView float32_view(const TraceTable& t) {
  const size_t n = t.size();
  TraceView tv;
  tv.table = &t;
  tv.start.resize(n);
  tv.dur.resize(n);
  tv.end.resize(n);
  for (size_t r = 0; r < n; ++r) {
    tv.start[r] = static_cast<float>(t.start_ts[r]);
    tv.dur[r] = static_cast<float>(t.duration[r]);
    tv.end[r] = tv.start[r] + tv.dur[r];
  }
  return tv;
}

// The job's sizes and its workers: one rank per (stage, dp rank), ranks in dp order within a
// stage (the artifact lines replicas up by rank order).
void place_workers(const TraceTable& t, LaneModel& model) {
  int32_t dp = 0, pp = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    dp = std::max(dp, t.dp_rank[r] + 1);
    pp = std::max(pp, t.stage[r] + 1);
  }
  model.dp_size = dp;
  model.pp_size = pp;
  model.worker_rank.assign(static_cast<size_t>(dp) * static_cast<size_t>(pp), -1);
  for (size_t r = 0; r < t.size(); ++r) {
    int32_t& w = model.worker_rank[static_cast<size_t>(t.stage[r] * dp + t.dp_rank[r])];
    if (w >= 0 && w != t.rank[r]) {
      throw ModelError("dp rank " + std::to_string(t.dp_rank[r]) + ", stage " +
                       std::to_string(t.stage[r]) + " is traced by two ranks (" +
                       std::to_string(w) + " and " + std::to_string(t.rank[r]) + ")");
    }
    w = t.rank[r];
  }
  for (int32_t s = 0; s < pp; ++s) {
    for (int32_t d = 0; d < dp; ++d) {
      const int32_t w = model.rank_of(s, d);
      if (w < 0) {
        throw ModelError("no rank traces dp rank " + std::to_string(d) + ", stage " +
                         std::to_string(s) + " (every stage needs all " + std::to_string(dp) +
                         " data-parallel ranks)");
      }
      if (d > 0 && w < model.rank_of(s, d - 1)) {
        throw ModelError("stage " + std::to_string(s) + ": rank " + std::to_string(w) +
                         " (dp rank " + std::to_string(d) + ") is below rank " +
                         std::to_string(model.rank_of(s, d - 1)) +
                         " of the previous dp rank; ranks must follow dp order within a stage");
      }
    }
  }
}

// The template's ops: the rows of dp rank 0 in the first step, and those rows per stage.
struct Template {
  ModelSkeleton skeleton;
  std::vector<std::vector<size_t>> stage_rows;
  bool has_separate_grads = false;  // the trace has a separate-grads-all-reduce anywhere
};

Template template_ops(const TraceTable& t, int32_t dp, int32_t pp, int64_t first_step) {
  Template tp;
  ModelSkeleton& m = tp.skeleton;
  m.pp = pp;
  m.dp = dp;
  tp.stage_rows.resize(static_cast<size_t>(pp));
  for (size_t r = 0; r < t.size(); ++r) {
    tp.has_separate_grads |= t.optype[r] == OpType::kSeparateGradsAllReduce;
    if (t.dp_rank[r] != 0 || t.step[r] != first_step) continue;
    const uint64_t k = ModelSkeleton::key(t.optype[r], t.seq_id[r], t.stage[r]);
    if (!m.by_key.emplace(k, static_cast<int32_t>(m.optype.size())).second) {
      throw ModelError("op " + ModelSkeleton::name(t.optype[r], t.seq_id[r], t.stage[r]) +
                       " occurs twice on " + row_where(t, r));
    }
    m.optype.push_back(t.optype[r]);
    m.stage.push_back(t.stage[r]);
    m.seq_id.push_back(t.seq_id[r]);
    m.template_row.push_back(r);
    tp.stage_rows[static_cast<size_t>(t.stage[r])].push_back(r);
  }
  return tp;
}

// Row -> template op. Lookups go through a dense table (stage, op type, seq_id): a hash lookup
// per row is the slowest part of a large trace otherwise.
class OpOfRow {
 public:
  OpOfRow(const TraceTable& t, const ModelSkeleton& m)
      : t_(t), m_(m), max_seq_(static_cast<size_t>(m.pp) * kNumOpTypes, -1) {
    const size_t num_ops = m.optype.size();
    for (size_t op = 0; op < num_ops; ++op) {
      int32_t& ms = max_seq_[slot(m.stage[op], m.optype[op])];
      ms = std::max(ms, m.seq_id[op]);
    }
    offset_.assign(max_seq_.size() + 1, 0);
    for (size_t i = 0; i < max_seq_.size(); ++i) offset_[i + 1] = offset_[i] + static_cast<size_t>(max_seq_[i] + 1);
    // Sparse seq_ids (not seen in practice) would make the table large: use the hash then.
    dense_ = offset_.back() <= 4 * num_ops + 4096;
    table_.assign(dense_ ? offset_.back() : 0, -1);
    for (size_t op = 0; dense_ && op < num_ops; ++op) {
      table_[offset_[slot(m.stage[op], m.optype[op])] + static_cast<size_t>(m.seq_id[op])] = static_cast<int32_t>(op);
    }
  }
  // -1: the row's op is not in the template.
  int32_t operator()(size_t r) const {
    if (!dense_) return m_.find(t_.optype[r], t_.seq_id[r], t_.stage[r]);
    const size_t k = slot(t_.stage[r], t_.optype[r]);
    if (t_.seq_id[r] < 0 || t_.seq_id[r] > max_seq_[k]) return -1;
    return table_[offset_[k] + static_cast<size_t>(t_.seq_id[r])];
  }

 private:
  static size_t slot(int32_t stage, OpType ty) { return static_cast<size_t>(stage) * kNumOpTypes + static_cast<size_t>(ty); }
  const TraceTable& t_;
  const ModelSkeleton& m_;
  std::vector<int32_t> max_seq_;
  std::vector<size_t> offset_;
  std::vector<int32_t> table_;
  bool dense_ = false;
};

void check_every_op_modelled(const ModelSkeleton& m) {
  for (size_t op = 0; op < m.optype.size(); ++op) {
    if (!m.modelled[op]) {
      throw ModelError("op " + m.name(static_cast<int32_t>(op)) +
                       " has no place in the dependency model" +
                       (is_dp_comm(m.optype[op]) && !m.use_dp
                            ? " (a data-parallel collective, but the job has no data parallelism)"
                            : ""));
    }
  }
}

// The skeleton as the model's OpGraph (validated) and per-node columns.
void build_graph(const ModelSkeleton& m, LaneModel& model) {
  const size_t num_ops = m.optype.size();
  std::vector<uint8_t> in_group(num_ops, 0);
  for (const auto& g : m.groups) {
    for (int32_t op : g) in_group[static_cast<size_t>(op)] = 1;
  }
  OpGraph& graph = model.graph;
  for (size_t op = 0; op < num_ops; ++op) {
    graph.add_node(m.name(static_cast<int32_t>(op)),
                   in_group[op] ? NodeKind::kComm : NodeKind::kCompute,
                   static_cast<int32_t>(m.optype[op]), m.stage[op],
                   m.optype[op] == OpType::kOptimizer);
  }
  for (size_t op = 0; op < num_ops; ++op) {
    for (int32_t d : m.deps[op]) graph.add_dependency(static_cast<NodeId>(op), d);
  }
  for (size_t g = 0; g < m.groups.size(); ++g) graph.add_comm_group(m.groups[g], m.group_sync[g] != 0);
  graph.validate();
  model.node_optype = m.optype;
  model.node_stage = m.stage;
  model.node_seq_id = m.seq_id;
}

// One trace row's times, in lane-major order ([lane][op]).
struct PackedCell {
  float start, end, dur;
  uint32_t row_plus_one;  // 0: no row yet
};

// The traced times of every cell, and each step's first start.
struct CellTimes {
  std::vector<float> raw_start, raw_end;
  std::vector<float> step_min;
};

// Rows arrive in trace order (a worker's rows of a step together), cells are node-major: a
// direct scatter would miss the cache on every row. So rows go first to packed records in
// lane-major order (a worker-step's rows land close together)...
std::vector<PackedCell> pack_rows(const TraceView& tv, const ModelSkeleton& m, const StepIndex& step_index,
                                  const std::vector<int64_t>& steps, std::vector<float>& step_min) {
  const TraceTable& t = *tv.table;
  const size_t n = t.size();
  const size_t num_ops = m.optype.size();
  if (n >= std::numeric_limits<uint32_t>::max()) {
    throw ModelError("the trace has " + std::to_string(n) + " rows; at most 4294967294 are supported");
  }
  const OpOfRow op_of_row(t, m);
  std::vector<PackedCell> packed(num_ops * steps.size() * static_cast<size_t>(m.dp), PackedCell{0, 0, 0, 0});
  step_min.assign(steps.size(), std::numeric_limits<float>::infinity());
  for (size_t r = 0; r < n; ++r) {
    const size_t si = step_index(t.step[r]);
    step_min[si] = std::min(step_min[si], tv.start[r]);
    const int32_t op = op_of_row(r);
    if (op < 0) {
      throw ModelError("op " + ModelSkeleton::name(t.optype[r], t.seq_id[r], t.stage[r]) + " on " +
                       row_where(t, r) + " (trace row " + std::to_string(r + 1) +
                       ") does not occur on dp rank 0 in step " + std::to_string(steps.front()) +
                       ", the template of the dependency model; every replica and step must run "
                       "the same ops");
    }
    const size_t lane = si * static_cast<size_t>(m.dp) + static_cast<size_t>(t.dp_rank[r]);
    PackedCell& p = packed[lane * num_ops + static_cast<size_t>(op)];
    if (p.row_plus_one != 0) {
      throw ModelError("op " + m.name(op) + " occurs twice on " + row_where(t, r));
    }
    p = PackedCell{tv.start[r], tv.end[r], tv.dur[r], static_cast<uint32_t>(r + 1)};
  }
  return packed;
}

// ... which are then transposed tile by tile into the node-major columns.
void transpose_cells(const std::vector<PackedCell>& packed, const ModelSkeleton& m, LaneModel& model,
                     CellTimes& times) {
  const size_t num_ops = m.optype.size();
  const size_t L = model.lanes.num_lanes();
  const auto dp = static_cast<size_t>(m.dp);
  const size_t cells = num_ops * L;
  times.raw_start.resize(cells);
  times.raw_end.resize(cells);
  model.duration.resize(cells);
  model.cell_row.resize(cells);
  constexpr size_t kTile = 16;  // ops per tile: 16 sequential write streams
  for (size_t v0 = 0; v0 < num_ops; v0 += kTile) {
    const size_t v1 = std::min(num_ops, v0 + kTile);
    for (size_t lane = 0; lane < L; ++lane) {
      const PackedCell* src = packed.data() + lane * num_ops;
      for (size_t v = v0; v < v1; ++v) {
        const PackedCell& p = src[v];
        if (p.row_plus_one == 0) {
          const auto d = static_cast<int32_t>(lane % dp);
          throw ModelError("op " + m.name(static_cast<int32_t>(v)) + " is missing on rank " +
                           std::to_string(model.rank_of(m.stage[v], d)) + " (dp rank " +
                           std::to_string(d) + ") in step " + std::to_string(model.steps[lane / dp]) +
                           "; every replica and step must run the same ops");
        }
        const size_t c = v * L + lane;
        times.raw_start[c] = p.start;
        times.raw_end[c] = p.end;
        model.duration[c] = p.dur;
        model.cell_row[c] = static_cast<int64_t>(p.row_plus_one) - 1;
      }
    }
  }
}

// The artifact's derived columns, and the step-relative times it stores (float32 after the shift).
void derive_columns(const CellTimes& times, LaneModel& model) {
  compute_transfer_durations(model.graph, model.lanes, times.raw_start, times.raw_end, model.transfer);
  compute_launch_delays(model.graph, model.lanes, times.raw_start, times.raw_end, times.step_min,
                        model.launch_delay);
  const size_t cells = times.raw_start.size();
  const size_t L = model.lanes.num_lanes();
  const auto dp = static_cast<size_t>(model.dp_size);
  model.real_start.resize(cells);
  model.real_end.resize(cells);
  for (size_t c = 0; c < cells; ++c) {
    const float origin = times.step_min[(c % L) / dp];
    model.real_start[c] = times.raw_start[c] - origin;
    model.real_end[c] = times.raw_end[c] - origin;
  }
}

}  // namespace

LaneModel build_megatron_model(const TraceTable& t, const JobMeta& meta) {
  if (t.size() == 0) throw ModelError("the trace has no rows");
  const TraceView tv = float32_view(t);
  LaneModel model;
  const StepIndex step_index(t.step);
  model.steps = step_index.steps();
  place_workers(t, model);

  Template tp = template_ops(t, model.dp_size, model.pp_size, model.steps.front());
  ModelSkeleton& m = tp.skeleton;
  m.deps.resize(m.optype.size());
  m.modelled.assign(m.optype.size(), 0);
  build_p2p_model(tv, tp.stage_rows, m);
  build_rank_model(tv, tp.stage_rows, meta.dsp_size, tp.has_separate_grads, m);
  check_every_op_modelled(m);
  build_graph(m, model);

  model.lanes.num_steps = static_cast<int32_t>(model.steps.size());
  model.lanes.lanes_per_step = model.dp_size;
  CellTimes times;
  transpose_cells(pack_rows(tv, m, step_index, model.steps, times.step_min), m, model, times);
  derive_columns(times, model);
  return model;
}

LaneModel select_steps(const LaneModel& in, std::span<const int64_t> wanted) {
  std::vector<int64_t> steps(wanted.begin(), wanted.end());
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::vector<size_t> src_index;
  for (int64_t s : steps) {
    auto it = std::lower_bound(in.steps.begin(), in.steps.end(), s);
    if (it == in.steps.end() || *it != s) {
      throw ModelError("step " + std::to_string(s) + " is not in the trace");
    }
    src_index.push_back(static_cast<size_t>(it - in.steps.begin()));
  }
  LaneModel out;
  out.graph = in.graph;
  out.lanes = in.lanes;
  out.lanes.num_steps = static_cast<int32_t>(steps.size());
  out.steps = steps;
  out.dp_size = in.dp_size;
  out.pp_size = in.pp_size;
  out.node_optype = in.node_optype;
  out.node_stage = in.node_stage;
  out.node_seq_id = in.node_seq_id;
  out.worker_rank = in.worker_rank;
  const size_t lps = static_cast<size_t>(in.lanes.lanes_per_step);
  const size_t L_in = in.lanes.num_lanes(), L_out = out.lanes.num_lanes();
  const size_t nodes = in.graph.num_nodes();
  const auto pick = [&](const auto& src, auto& dst) {
    dst.resize(nodes * L_out);
    for (size_t v = 0; v < nodes; ++v) {
      for (size_t k = 0; k < src_index.size(); ++k) {
        std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(v * L_in + src_index[k] * lps), lps,
                    dst.begin() + static_cast<std::ptrdiff_t>(v * L_out + k * lps));
      }
    }
  };
  pick(in.duration, out.duration);
  pick(in.transfer, out.transfer);
  pick(in.launch_delay, out.launch_delay);
  pick(in.real_start, out.real_start);
  pick(in.real_end, out.real_end);
  pick(in.cell_row, out.cell_row);
  return out;
}

}  // namespace sp::whatif
