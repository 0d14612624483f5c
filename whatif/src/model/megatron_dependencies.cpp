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

// build_rank_model's steps, over the template rows of each stage in start order.
class RankModel {
 public:
  RankModel(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows, ModelSkeleton& m)
      : tv_(tv), t_(*tv.table), m_(m), sorted_(stage_rows.size()) {
    for (size_t s = 0; s < stage_rows.size(); ++s) sorted_[s] = sorted_template_rows(tv, stage_rows[s]);
  }

  // Stream order: compute, and each p2p type separately; the first backward send/recv waits
  // for the forward two computes before the first backward compute.
  void stream_order(int32_t s) {
    const auto& rows = sorted_[static_cast<size_t>(s)];
    const auto comp = compute_rows(s);
    m_.chain(ops_of(comp), {});
    for (OpType ot : {OpType::kForwardSend, OpType::kForwardRecv, OpType::kBackwardSend, OpType::kBackwardRecv}) {
      m_.chain(ops_of(rows_of(t_, rows, {ot})), {});
    }
    size_t first_bwd = comp.size();
    for (size_t i = 0; i < comp.size(); ++i) {
      if (t_.optype[comp[i]] == OpType::kBackwardCompute) {
        first_bwd = i;
        break;
      }
    }
    if (first_bwd == comp.size()) {
      throw ModelError("stage " + std::to_string(s) + " has no backward-compute op in the first step of dp rank 0");
    }
    if (first_bwd < 2) return;
    for (size_t k : {first_bwd - 1, first_bwd - 2}) {
      if (t_.optype[comp[k]] != OpType::kForwardCompute) {
        throw ModelError("stage " + std::to_string(s) + ": the compute op " + m_.name(op_of(comp[k])) +
                         " before the first backward is not a forward");
      }
    }
    const int32_t fwd = op_of(comp[first_bwd - 2]);
    for (OpType ot : {OpType::kBackwardRecv, OpType::kBackwardSend}) {
      const int32_t op = m_.find(ot, 0, s);
      if (op >= 0) m_.add_dep(op, fwd);
    }
  }

  // The data-parallel stream runs in launch order.
  void dp_stream_order(int32_t s) {
    m_.chain(ops_of(rows_of(t_, sorted_[static_cast<size_t>(s)],
                            {OpType::kParamsAllGather, OpType::kGradsReduceScatter})),
             {});
  }

  // Each model chunk's params all-gather (the latest-numbered one of the chunk) precedes that
  // chunk's first forward.
  void all_gather_before_forward(int32_t s) {
    link_chunks(s, {OpType::kParamsAllGather, true, "params all-gather order"},
                {OpType::kForwardCompute, &tv_.start, true}, false);
  }

  // Overlapped: each chunk's grads reduce-scatter (the lowest-numbered) follows the chunk's
  // last backward.
  void reduce_scatter_after_backward(int32_t s) {
    link_chunks(s, {OpType::kGradsReduceScatter, false, "grads reduce-scatter order"},
                {OpType::kBackwardCompute, &tv_.end, false}, true);
  }

  // After the last compute: gc -> layer-norm all-reduce -> [embedding all-reduce] -> [grads
  // reduce-scatters, or the separate-grads all-reduce when overlapped] -> clip -> optimizer.
  void post_compute_chain(int32_t s) {
    const int32_t pp = m_.pp;
    // Not kNoRow: every stage has a backward compute (checked with the stream order).
    const size_t last = extreme_row(compute_rows(s), tv_.end, [](size_t) { return true; }, std::greater<float>());
    const int32_t gc = m_.require(OpType::kGc, 0, s, "gc after the last compute");
    m_.add_dep(gc, op_of(last));
    int32_t num_rs = -1;
    for (size_t r : sorted_[static_cast<size_t>(s)]) {
      if (t_.optype[r] == OpType::kGradsReduceScatter) num_rs = std::max(num_rs, t_.seq_id[r] + 1);
    }
    std::vector<int32_t> post{m_.require(OpType::kLayernormGradsAllReduce, 0, s, "post-compute chain")};
    if (s == 0 || s == pp - 1) {
      post.push_back(m_.require(OpType::kEmbeddingGradsAllReduce, 0, s, "first/last stage embedding"));
    }
    std::vector<int32_t> first_deps;  // [the last reduce-scatter when overlapped,] gc
    if (m_.use_dp && num_rs < 1) throw ModelError("stage " + std::to_string(s) + " has no grads-reduce-scatter op");
    if (m_.use_dp && m_.overlap_dp) {
      first_deps.push_back(m_.require(OpType::kGradsReduceScatter, num_rs - 1, s, "post-compute chain"));
      post.push_back(m_.require(OpType::kSeparateGradsAllReduce, 0, s, "post-compute chain"));
    } else if (m_.use_dp) {
      for (int32_t i = 0; i < num_rs; ++i) post.push_back(m_.require(OpType::kGradsReduceScatter, i, s, "post-compute chain"));
    }
    first_deps.push_back(gc);
    post.push_back(m_.require(OpType::kOptimizerClipMainGrad, 0, s, "post-compute chain"));
    post.push_back(m_.require(OpType::kOptimizer, 0, s, "post-compute chain"));
    m_.chain(post, first_deps);
  }

  // Cross-rank groups besides p2p: every dp collective (synchronised over the replicas), the
  // embedding all-reduce of the first and last stage, clip-main-grad over all stages.
  void sync_groups(const std::vector<std::vector<size_t>>& stage_rows) {
    const int32_t pp = m_.pp;
    if (m_.use_dp) {
      for (const auto& rows : stage_rows) {
        for (size_t r : rows) {
          if (is_dp_comm(t_.optype[r])) add_group({op_of(r)}, true);
        }
      }
    }
    if (pp > 1) {
      add_group({m_.require(OpType::kEmbeddingGradsAllReduce, 0, 0, "embedding sync"),
                 m_.require(OpType::kEmbeddingGradsAllReduce, 0, pp - 1, "embedding sync")},
                false);
    } else {
      add_group({m_.require(OpType::kEmbeddingGradsAllReduce, 0, 0, "embedding sync")}, false);
    }
    std::vector<int32_t> clip;
    for (int32_t s = 0; s < pp; ++s) clip.push_back(m_.require(OpType::kOptimizerClipMainGrad, 0, s, "optimizer sync"));
    add_group(clip, true);
  }

 private:
  // Which collective of a model chunk is linked: op type, numbered from the last one or not.
  struct ChunkComm {
    OpType type;
    bool latest_first;
    const char* why;  // names the rule in a "needs op" error
  };
  // Which compute of the chunk: op type, the earliest by `key` (start) or the latest (end).
  struct ChunkCompute {
    OpType type;
    const std::vector<float>* key;
    bool earliest;
  };

  // For each model chunk, the first of its `comm` ops in numbering order and its extreme
  // `compute` op: the comm op waits for the compute (`comm_after_compute`) or precedes it.
  void link_chunks(int32_t s, ChunkComm comm, ChunkCompute compute, bool comm_after_compute) {
    const auto comp = compute_rows(s);
    const auto n = static_cast<int32_t>(rows_of(t_, sorted_[static_cast<size_t>(s)], {comm.type}).size());
    std::vector<int32_t> chunks_done;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t op = m_.require(comm.type, comm.latest_first ? n - 1 - k : k, s, comm.why);
      const int32_t mc = t_.mc[m_.template_row[static_cast<size_t>(op)]];
      if (std::find(chunks_done.begin(), chunks_done.end(), mc) != chunks_done.end()) continue;
      const auto keep = [&](size_t r) { return t_.optype[r] == compute.type && t_.mc[r] == mc; };
      const size_t row = compute.earliest ? extreme_row(comp, *compute.key, keep, std::less<float>())
                                          : extreme_row(comp, *compute.key, keep, std::greater<float>());
      if (row == kNoRow) {
        throw ModelError("stage " + std::to_string(s) + ": no " + std::string(op_type_name(compute.type)) +
                         " of model chunk " + std::to_string(mc) + " for " + m_.name(op));
      }
      if (comm_after_compute) {
        m_.add_dep(op, op_of(row));
      } else {
        m_.add_dep(op_of(row), op);
      }
      chunks_done.push_back(mc);
    }
  }

  int32_t op_of(size_t r) const { return m_.find(t_.optype[r], t_.seq_id[r], t_.stage[r]); }
  std::vector<int32_t> ops_of(const std::vector<size_t>& rows) const {
    std::vector<int32_t> ops;
    ops.reserve(rows.size());
    for (size_t r : rows) ops.push_back(op_of(r));
    return ops;
  }
  std::vector<size_t> compute_rows(int32_t s) const {
    return rows_of(t_, sorted_[static_cast<size_t>(s)], {OpType::kForwardCompute, OpType::kBackwardCompute});
  }
  void add_group(const std::vector<int32_t>& ops, bool sync) {
    m_.groups.push_back(ops);
    m_.group_sync.push_back(sync ? 1 : 0);
  }

  const TraceView& tv_;
  const TraceTable& t_;
  ModelSkeleton& m_;
  std::vector<std::vector<size_t>> sorted_;
};

}  // namespace

void build_rank_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                      int dsp_size, bool trace_has_separate_grads, ModelSkeleton& m) {
  RankModel model(tv, stage_rows, m);
  const int32_t pp = m.pp;
  for (int32_t s = 0; s < pp; ++s) model.stream_order(s);
  m.use_dp = static_cast<int64_t>(m.dp) * dsp_size > 1;
  m.overlap_dp = trace_has_separate_grads;
  if (m.use_dp) {
    for (int32_t s = 0; s < pp; ++s) model.dp_stream_order(s);
    for (int32_t s = 0; s < pp; ++s) {
      model.all_gather_before_forward(s);
      if (m.overlap_dp) model.reduce_scatter_after_backward(s);
    }
  }
  for (int32_t s = 0; s < pp; ++s) model.post_compute_chain(s);
  model.sync_groups(stage_rows);
}

}  // namespace sp::whatif
