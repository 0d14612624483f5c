// The in-rank dependencies and cross-rank groups of a Megatron-style step, besides pipeline
// p2p pairing (p2p_matching.cpp). Mirrors the artifact's dependency model:
// - each stream (compute; each of the four p2p types; data-parallel comm) runs in launch order;
// - the first backward send/recv of a stage waits for the second-to-last forward before the
//   first backward (1F1B warm-up);
// - params all-gather of a model chunk precedes that chunk's first forward; with overlapped
//   data parallelism a chunk's grads reduce-scatter follows its last backward;
// - after the last compute: gc -> layer-norm all-reduce -> [embedding all-reduce on the first
//   and last stage] -> [grads reduce-scatters, or the separate-grads all-reduce when overlapped]
//   -> clip-main-grad (synchronised over all stages and replicas) -> optimizer.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "megatron_skeleton.h"

namespace sp::whatif {

std::string ModelSkeleton::name(OpType t, int32_t seq, int32_t st) {
  return std::string(op_type_name(t)) + "_" + std::to_string(seq) + "_" + std::to_string(st);
}

std::string ModelSkeleton::name(int32_t op) const {
  const auto i = static_cast<size_t>(op);
  return name(optype[i], seq_id[i], stage[i]);
}

int32_t ModelSkeleton::require(OpType t, int32_t seq, int32_t st, const char* why) const {
  const int32_t op = find(t, seq, st);
  if (op < 0) {
    throw ModelError("the dependency model needs op " + name(t, seq, st) + " (" + why +
                     ") but dp rank 0 has no such op in the first step");
  }
  return op;
}

void ModelSkeleton::chain(const std::vector<int32_t>& ops, const std::vector<int32_t>& first_deps) {
  for (size_t i = 0; i < ops.size(); ++i) {
    mark(ops[i]);
    if (i == 0) {
      for (int32_t d : first_deps) add_dep(ops[0], d);
    } else {
      add_dep(ops[i], ops[i - 1]);
    }
  }
}

std::vector<size_t> sorted_template_rows(const TraceView& tv, const std::vector<size_t>& rows) {
  const TraceTable& t = *tv.table;
  std::vector<size_t> out = rows;
  std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) {
    if (tv.start[a] != tv.start[b]) return tv.start[a] < tv.start[b];
    if (t.seq_id[a] != t.seq_id[b]) return t.seq_id[a] < t.seq_id[b];
    return op_type_name(t.optype[a]) < op_type_name(t.optype[b]);
  });
  return out;
}

namespace {

std::vector<size_t> rows_of(const TraceTable& t, const std::vector<size_t>& rows,
                            std::initializer_list<OpType> types) {
  std::vector<size_t> out;
  for (size_t r : rows) {
    if (std::find(types.begin(), types.end(), t.optype[r]) != types.end()) out.push_back(r);
  }
  return out;
}

// The row of `rows` passing `keep` whose `key` comes first by `before` (ties: the earlier row);
// kNoRow when none passes.
constexpr size_t kNoRow = static_cast<size_t>(-1);
template <class Keep, class Before>
size_t extreme_row(const std::vector<size_t>& rows, const std::vector<float>& key, Keep keep, Before before) {
  size_t best = kNoRow;
  for (size_t r : rows) {
    if (keep(r) && (best == kNoRow || before(key[r], key[best]))) best = r;
  }
  return best;
}

}  // namespace

void build_rank_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                      int dsp_size, bool trace_has_separate_grads, ModelSkeleton& m) {
  const TraceTable& t = *tv.table;
  const int32_t pp = m.pp;
  const auto op_of = [&](size_t r) { return m.find(t.optype[r], t.seq_id[r], t.stage[r]); };
  const auto ops_of = [&](const std::vector<size_t>& rows) {
    std::vector<int32_t> ops;
    ops.reserve(rows.size());
    for (size_t r : rows) ops.push_back(op_of(r));
    return ops;
  };

  std::vector<std::vector<size_t>> sorted(static_cast<size_t>(pp));
  for (int32_t s = 0; s < pp; ++s) {
    sorted[static_cast<size_t>(s)] = sorted_template_rows(tv, stage_rows[static_cast<size_t>(s)]);
  }

  // Stream order: compute, and each p2p type separately.
  for (int32_t s = 0; s < pp; ++s) {
    const auto& rows = sorted[static_cast<size_t>(s)];
    const auto comp = rows_of(t, rows, {OpType::kForwardCompute, OpType::kBackwardCompute});
    m.chain(ops_of(comp), {});
    for (OpType ot : {OpType::kForwardSend, OpType::kForwardRecv, OpType::kBackwardSend,
                      OpType::kBackwardRecv}) {
      m.chain(ops_of(rows_of(t, rows, {ot})), {});
    }
    // The first backward send/recv waits for the forward two computes before the first
    // backward compute.
    size_t first_bwd = comp.size();
    for (size_t i = 0; i < comp.size(); ++i) {
      if (t.optype[comp[i]] == OpType::kBackwardCompute) {
        first_bwd = i;
        break;
      }
    }
    if (first_bwd == comp.size()) {
      throw ModelError("stage " + std::to_string(s) +
                       " has no backward-compute op in the first step of dp rank 0");
    }
    if (first_bwd >= 2) {
      for (size_t k : {first_bwd - 1, first_bwd - 2}) {
        if (t.optype[comp[k]] != OpType::kForwardCompute) {
          throw ModelError("stage " + std::to_string(s) + ": the compute op " + m.name(op_of(comp[k])) +
                           " before the first backward is not a forward");
        }
      }
      const int32_t fwd = op_of(comp[first_bwd - 2]);
      for (OpType ot : {OpType::kBackwardRecv, OpType::kBackwardSend}) {
        const int32_t op = m.find(ot, 0, s);
        if (op >= 0) m.add_dep(op, fwd);
      }
    }
  }

  m.use_dp = static_cast<int64_t>(m.dp) * dsp_size > 1;
  m.overlap_dp = trace_has_separate_grads;
  if (m.use_dp) {
    for (int32_t s = 0; s < pp; ++s) {
      m.chain(ops_of(rows_of(t, sorted[static_cast<size_t>(s)],
                             {OpType::kParamsAllGather, OpType::kGradsReduceScatter})),
              {});
    }
    for (int32_t s = 0; s < pp; ++s) {
      const auto& rows = sorted[static_cast<size_t>(s)];
      const auto comp = rows_of(t, rows, {OpType::kForwardCompute, OpType::kBackwardCompute});
      const auto ag = rows_of(t, rows, {OpType::kParamsAllGather});
      // Each model chunk's params all-gather (the latest-numbered one of the chunk) precedes
      // that chunk's first forward.
      std::vector<int32_t> chunks_done;
      for (auto i = static_cast<int32_t>(ag.size()) - 1; i >= 0; --i) {
        const int32_t ag_op = m.require(OpType::kParamsAllGather, i, s, "params all-gather order");
        const int32_t mc = t.mc[m.template_row[static_cast<size_t>(ag_op)]];
        if (std::find(chunks_done.begin(), chunks_done.end(), mc) != chunks_done.end()) continue;
        const size_t first = extreme_row(
            comp, tv.start, [&](size_t r) { return t.optype[r] == OpType::kForwardCompute && t.mc[r] == mc; },
            std::less<float>());
        if (first == kNoRow) {
          throw ModelError("stage " + std::to_string(s) + ": no forward-compute of model chunk " +
                           std::to_string(mc) + " for " + m.name(ag_op));
        }
        m.add_dep(op_of(first), ag_op);
        chunks_done.push_back(mc);
      }
      if (!m.overlap_dp) continue;
      // Overlapped: each chunk's grads reduce-scatter (the lowest-numbered) follows the
      // chunk's last backward.
      const auto rs = rows_of(t, rows, {OpType::kGradsReduceScatter});
      chunks_done.clear();
      for (int32_t i = 0; i < static_cast<int32_t>(rs.size()); ++i) {
        const int32_t rs_op = m.require(OpType::kGradsReduceScatter, i, s, "grads reduce-scatter order");
        const int32_t mc = t.mc[m.template_row[static_cast<size_t>(rs_op)]];
        if (std::find(chunks_done.begin(), chunks_done.end(), mc) != chunks_done.end()) continue;
        const size_t last = extreme_row(
            comp, tv.end, [&](size_t r) { return t.optype[r] == OpType::kBackwardCompute && t.mc[r] == mc; },
            std::greater<float>());
        if (last == kNoRow) {
          throw ModelError("stage " + std::to_string(s) + ": no backward-compute of model chunk " +
                           std::to_string(mc) + " for " + m.name(rs_op));
        }
        m.add_dep(rs_op, op_of(last));
        chunks_done.push_back(mc);
      }
    }
  }

  // After the last compute.
  for (int32_t s = 0; s < pp; ++s) {
    const auto& rows = sorted[static_cast<size_t>(s)];
    const auto comp = rows_of(t, rows, {OpType::kForwardCompute, OpType::kBackwardCompute});
    // Not kNoRow: every stage has a backward compute (checked with the stream order above).
    const size_t last = extreme_row(comp, tv.end, [](size_t) { return true; }, std::greater<float>());
    const int32_t gc = m.require(OpType::kGc, 0, s, "gc after the last compute");
    m.add_dep(gc, op_of(last));
    int32_t num_rs = -1;
    for (size_t r : rows) {
      if (t.optype[r] == OpType::kGradsReduceScatter) num_rs = std::max(num_rs, t.seq_id[r] + 1);
    }
    std::vector<int32_t> post{m.require(OpType::kLayernormGradsAllReduce, 0, s, "post-compute chain")};
    if (s == 0 || s == pp - 1) {
      post.push_back(m.require(OpType::kEmbeddingGradsAllReduce, 0, s, "first/last stage embedding"));
    }
    std::vector<int32_t> first_deps{gc};
    if (m.use_dp && num_rs < 1) {
      throw ModelError("stage " + std::to_string(s) + " has no grads-reduce-scatter op");
    }
    if (m.use_dp && m.overlap_dp) {
      first_deps.insert(first_deps.begin(),
                        m.require(OpType::kGradsReduceScatter, num_rs - 1, s, "post-compute chain"));
      post.push_back(m.require(OpType::kSeparateGradsAllReduce, 0, s, "post-compute chain"));
    } else if (m.use_dp) {
      for (int32_t i = 0; i < num_rs; ++i) {
        post.push_back(m.require(OpType::kGradsReduceScatter, i, s, "post-compute chain"));
      }
    }
    post.push_back(m.require(OpType::kOptimizerClipMainGrad, 0, s, "post-compute chain"));
    post.push_back(m.require(OpType::kOptimizer, 0, s, "post-compute chain"));
    m.chain(post, first_deps);
  }

  // Cross-rank groups besides p2p.
  if (m.use_dp) {
    for (const auto& rows : stage_rows) {
      for (size_t r : rows) {
        if (is_dp_comm(t.optype[r])) {
          m.groups.push_back({op_of(r)});
          m.group_sync.push_back(1);
        }
      }
    }
  }
  if (pp > 1) {
    m.groups.push_back({m.require(OpType::kEmbeddingGradsAllReduce, 0, 0, "embedding sync"),
                        m.require(OpType::kEmbeddingGradsAllReduce, 0, pp - 1, "embedding sync")});
  } else {
    m.groups.push_back({m.require(OpType::kEmbeddingGradsAllReduce, 0, 0, "embedding sync")});
  }
  m.group_sync.push_back(0);
  std::vector<int32_t> clip;
  for (int32_t s = 0; s < pp; ++s) {
    clip.push_back(m.require(OpType::kOptimizerClipMainGrad, 0, s, "optimizer sync"));
  }
  m.groups.push_back(clip);
  m.group_sync.push_back(1);
}

}  // namespace sp::whatif
