// Pipeline send/recv pairing and the compute <-> p2p dependencies, following the artifact's
// rules. The profiler may record p2p ops that were never launched ("no-ops"):
// - type 1: a recv that starts after the last compute of its direction, or a send that ends
//   before the first compute of its direction, is not matched to any compute;
// - type 2: a send/recv of the first or last model chunk of the whole model (its peer chunk
//   would be outside the model), typical with virtual pipelining.
// No-ops stay in the graph as single-member communication groups (they still occupy their
// stream), the others are paired with the peer stage's op of the same rank among valid ops.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "megatron_skeleton.h"

namespace sp::whatif {
namespace {

// The artifact's tolerance for clock skew between a p2p op and the compute it belongs to.
constexpr double kMatchEps = 5e-5;

struct Direction {
  OpType compute;
  OpType send;
  OpType recv;
  int send_delta;  // peer model chunk / stage offset of a send (recv: the opposite)
};

constexpr Direction kDirections[] = {
    {OpType::kForwardCompute, OpType::kForwardSend, OpType::kForwardRecv, +1},
    {OpType::kBackwardCompute, OpType::kBackwardSend, OpType::kBackwardRecv, -1},
};

OpType peer_type(OpType t) {
  switch (t) {
    case OpType::kForwardSend: return OpType::kForwardRecv;
    case OpType::kForwardRecv: return OpType::kForwardSend;
    case OpType::kBackwardSend: return OpType::kBackwardRecv;
    default: return OpType::kBackwardSend;
  }
}

int peer_stage_delta(OpType t) {
  return (t == OpType::kForwardSend || t == OpType::kBackwardRecv) ? +1 : -1;
}

// One stage's template p2p ops (in start order) and what the matching found for each.
struct StageP2p {
  int32_t stage;
  std::vector<size_t> comp, comm;  // template rows: compute ops, p2p ops
  std::vector<uint8_t> no_op;      // per comm op
  std::vector<int32_t> match;      // per comm op: its compute op, or -1
};

StageP2p stage_p2p(const TraceView& tv, const std::vector<size_t>& stage_rows, int32_t s) {
  const TraceTable& t = *tv.table;
  StageP2p st{s, {}, {}, {}, {}};
  for (size_t r : sorted_template_rows(tv, stage_rows)) {
    if (is_compute(t.optype[r])) st.comp.push_back(r);
    if (is_p2p(t.optype[r])) st.comm.push_back(r);
  }
  st.no_op.assign(st.comm.size(), 1);
  st.match.assign(st.comm.size(), -1);
  return st;
}

// The compute ops of one direction: how many, and the bounds outside which a p2p op is a
// type-1 no-op. The artifact widens the bound in float64, then compares the float32 column
// against it in float32 (numpy's scalar casting) when counting, but in float64 when skipping.
struct DirectionBounds {
  int64_t num_compute = 0;
  double recv_bound = 0, send_bound = 0;
};

DirectionBounds direction_bounds(const TraceView& tv, const StageP2p& st, const Direction& d) {
  const TraceTable& t = *tv.table;
  float last_start = 0, first_end = 0;
  DirectionBounds b;
  for (size_t r : st.comp) {
    if (t.optype[r] != d.compute) continue;
    last_start = b.num_compute == 0 ? tv.start[r] : std::max(last_start, tv.start[r]);
    first_end = b.num_compute == 0 ? tv.end[r] : std::min(first_end, tv.end[r]);
    ++b.num_compute;
  }
  if (b.num_compute == 0) {
    throw ModelError("stage " + std::to_string(st.stage) + " has no " + std::string(op_type_name(d.compute)) +
                     " op in the first step of dp rank 0; the pipeline model needs both directions");
  }
  b.recv_bound = static_cast<double>(last_start) + kMatchEps;
  b.send_bound = static_cast<double>(first_end) - kMatchEps;
  return b;
}

// The sends (or recvs) of one direction: each op inside the bounds goes to the next compute
// of that direction; it is a type-2 no-op when its peer chunk is outside the model.
void match_ops(const TraceView& tv, const ModelSkeleton& m, const Direction& d, const DirectionBounds& b,
               bool is_send, int64_t total_chunks, StageP2p& st) {
  const TraceTable& t = *tv.table;
  const int32_t s = st.stage;
  const OpType ot = is_send ? d.send : d.recv;
  const auto recv_bound32 = static_cast<float>(b.recv_bound);
  const auto send_bound32 = static_cast<float>(b.send_bound);
  int64_t cnt = 0;
  for (size_t r : st.comm) {
    if (t.optype[r] != ot) continue;
    if (is_send ? tv.end[r] >= send_bound32 : tv.start[r] <= recv_bound32) ++cnt;
  }
  int32_t compute_id = 0;
  if (cnt != b.num_compute) {
    const std::string what = "stage " + std::to_string(s) + ": " + std::to_string(cnt) + " " +
                             std::string(op_type_name(ot)) + " ops for " + std::to_string(b.num_compute) + " " +
                             std::string(op_type_name(d.compute)) + " ops";
    if (s != 0 && s != m.pp - 1) throw ModelError(what + "; only the first and last stages may lack pipeline ops");
    if (cnt != 0 && cnt + 1 != b.num_compute) throw ModelError(what + "; expected as many, one fewer, or none");
    // A missing first receive: its compute has no matching op.
    if (!is_send && cnt + 1 == b.num_compute) compute_id = 1;
  }
  const int delta = is_send ? d.send_delta : -d.send_delta;
  for (size_t i = 0; i < st.comm.size(); ++i) {
    const size_t r = st.comm[i];
    if (t.optype[r] != ot) continue;
    const bool type1 = is_send ? static_cast<double>(tv.end[r]) < b.send_bound
                               : static_cast<double>(tv.start[r]) > b.recv_bound;
    if (type1) continue;
    const int32_t c = m.require(d.compute, compute_id, s, "a pipeline p2p op's compute");
    const int64_t peer_chunk = static_cast<int64_t>(t.gmc[m.template_row[static_cast<size_t>(c)]]) + delta;
    st.no_op[i] = (peer_chunk >= total_chunks || peer_chunk < 0) ? 1 : 0;
    st.match[i] = c;
    ++compute_id;
  }
}

// Pairing key (the two op names the pair would have, sorted) -> members.
using P2pPairs = std::map<std::string, std::vector<int32_t>>;

// Valid ops pair by their rank among the valid ops of their type; the rest are no-ops.
void pair_valid_ops(const TraceTable& t, const ModelSkeleton& m, const StageP2p& st, P2pPairs& pairs,
                    std::vector<int32_t>& no_ops) {
  const int32_t s = st.stage;
  for (const OpType ot : {OpType::kForwardSend, OpType::kForwardRecv, OpType::kBackwardSend, OpType::kBackwardRecv}) {
    int32_t valid_id = 0;
    for (size_t i = 0; i < st.comm.size(); ++i) {
      const size_t r = st.comm[i];
      if (t.optype[r] != ot || st.no_op[i]) continue;
      const int32_t peer_s = (peer_stage_delta(ot) + s + m.pp) % m.pp;
      std::string a = ModelSkeleton::name(ot, valid_id, s);
      std::string b = ModelSkeleton::name(peer_type(ot), valid_id, peer_s);
      if (b < a) std::swap(a, b);
      pairs[a + "," + b].push_back(m.find(ot, t.seq_id[r], s));
      ++valid_id;
    }
  }
  for (size_t i = 0; i < st.comm.size(); ++i) {
    if (st.no_op[i]) no_ops.push_back(m.find(t.optype[st.comm[i]], t.seq_id[st.comm[i]], s));
  }
}

// Compute <-> p2p: a send waits for its compute; a recv feeds its compute and is posted after
// the previous compute of the same direction.
void link_to_compute(const TraceTable& t, const StageP2p& st, ModelSkeleton& m) {
  const int32_t s = st.stage;
  for (size_t i = 0; i < st.comm.size(); ++i) {
    if (st.match[i] < 0) continue;
    const size_t r = st.comm[i];
    const int32_t op = m.find(t.optype[r], t.seq_id[r], s);
    const bool is_send = t.optype[r] == OpType::kForwardSend || t.optype[r] == OpType::kBackwardSend;
    const int32_t c = st.match[i];
    if (is_send) {
      m.add_dep(op, c);
      continue;
    }
    m.add_dep(c, op);
    const int32_t prev_seq = m.seq_id[static_cast<size_t>(c)] - 1;
    if (prev_seq >= 0) {
      m.add_dep(op, m.require(m.optype[static_cast<size_t>(c)], prev_seq, s, "the compute before a pipeline recv"));
    }
  }
}

// Each pair a communication group of two; each no-op one of its own.
void add_p2p_groups(const P2pPairs& pairs, std::vector<int32_t> no_ops, ModelSkeleton& m) {
  for (const auto& [key, members] : pairs) {
    if (members.size() != 2) {
      throw ModelError("pipeline p2p pair " + key + " has " + std::to_string(members.size()) +
                       " participant(s) in the first step of dp rank 0, expected 2");
    }
    m.groups.push_back(members);
    m.group_sync.push_back(0);
  }
  std::sort(no_ops.begin(), no_ops.end());
  no_ops.erase(std::unique(no_ops.begin(), no_ops.end()), no_ops.end());
  for (int32_t op : no_ops) {
    m.groups.push_back({op});
    m.group_sync.push_back(0);
  }
}

}  // namespace

void build_p2p_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                     ModelSkeleton& m) {
  const TraceTable& t = *tv.table;
  int32_t max_mc = -1;
  for (const auto& rows : stage_rows) {
    for (size_t r : rows) max_mc = std::max(max_mc, t.mc[r]);
  }
  const int64_t total_chunks = static_cast<int64_t>(max_mc + 1) * m.pp;
  P2pPairs pairs;
  std::vector<int32_t> no_ops;
  for (int32_t s = 0; s < m.pp; ++s) {
    StageP2p st = stage_p2p(tv, stage_rows[static_cast<size_t>(s)], s);
    for (const Direction& d : kDirections) {
      const DirectionBounds b = direction_bounds(tv, st, d);
      for (const bool is_send : {true, false}) match_ops(tv, m, d, b, is_send, total_chunks, st);
    }
    pair_valid_ops(t, m, st, pairs, no_ops);
    link_to_compute(t, st, m);
  }
  add_p2p_groups(pairs, std::move(no_ops), m);
}

}  // namespace sp::whatif
