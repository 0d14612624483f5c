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

}  // namespace

void build_p2p_model(const TraceView& tv, const std::vector<std::vector<size_t>>& stage_rows,
                     ModelSkeleton& m) {
  const TraceTable& t = *tv.table;
  const int32_t pp = m.pp;
  int32_t max_mc = -1;
  for (const auto& rows : stage_rows) {
    for (size_t r : rows) max_mc = std::max(max_mc, t.mc[r]);
  }
  const int32_t vpp = max_mc + 1;
  const int64_t total_chunks = static_cast<int64_t>(vpp) * pp;

  // Pairing key (the two op names the pair would have, sorted) -> members.
  std::map<std::string, std::vector<int32_t>> pairs;
  std::vector<int32_t> no_ops;

  for (int32_t s = 0; s < pp; ++s) {
    const std::vector<size_t> rows = sorted_template_rows(tv, stage_rows[static_cast<size_t>(s)]);
    std::vector<size_t> comp, comm;
    for (size_t r : rows) {
      if (is_compute(t.optype[r])) comp.push_back(r);
      if (is_p2p(t.optype[r])) comm.push_back(r);
    }
    std::vector<uint8_t> no_op(comm.size(), 1);
    std::vector<int32_t> match(comm.size(), -1);

    for (const Direction& d : kDirections) {
      float last_start = 0, first_end = 0;
      int64_t num_compute = 0;
      for (size_t r : comp) {
        if (t.optype[r] != d.compute) continue;
        last_start = num_compute == 0 ? tv.start[r] : std::max(last_start, tv.start[r]);
        first_end = num_compute == 0 ? tv.end[r] : std::min(first_end, tv.end[r]);
        ++num_compute;
      }
      if (num_compute == 0) {
        throw ModelError("stage " + std::to_string(s) + " has no " +
                         std::string(op_type_name(d.compute)) +
                         " op in the first step of dp rank 0; the pipeline model needs both "
                         "directions");
      }
      // The artifact widens the bound in float64, then compares the float32 column against it
      // in float32 (numpy's scalar casting) when counting, but in float64 when skipping.
      const double recv_bound = static_cast<double>(last_start) + kMatchEps;
      const double send_bound = static_cast<double>(first_end) - kMatchEps;
      const auto recv_bound32 = static_cast<float>(recv_bound);
      const auto send_bound32 = static_cast<float>(send_bound);

      for (const bool is_send : {true, false}) {
        const OpType ot = is_send ? d.send : d.recv;
        int64_t cnt = 0;
        for (size_t r : comm) {
          if (t.optype[r] != ot) continue;
          if (is_send ? tv.end[r] >= send_bound32 : tv.start[r] <= recv_bound32) ++cnt;
        }
        int32_t compute_id = 0;
        if (cnt != num_compute) {
          const std::string what = "stage " + std::to_string(s) + ": " + std::to_string(cnt) +
                                   " " + std::string(op_type_name(ot)) + " ops for " +
                                   std::to_string(num_compute) + " " +
                                   std::string(op_type_name(d.compute)) + " ops";
          if (s != 0 && s != pp - 1) {
            throw ModelError(what + "; only the first and last stages may lack pipeline ops");
          }
          if (cnt != 0 && cnt + 1 != num_compute) {
            throw ModelError(what + "; expected as many, one fewer, or none");
          }
          // A missing first receive: its compute has no matching op.
          if (!is_send && cnt + 1 == num_compute) compute_id = 1;
        }
        const int delta = is_send ? d.send_delta : -d.send_delta;
        for (size_t i = 0; i < comm.size(); ++i) {
          const size_t r = comm[i];
          if (t.optype[r] != ot) continue;
          const bool type1 = is_send ? static_cast<double>(tv.end[r]) < send_bound
                                     : static_cast<double>(tv.start[r]) > recv_bound;
          if (type1) continue;
          const int32_t c = m.require(d.compute, compute_id, s, "a pipeline p2p op's compute");
          const int64_t peer_chunk = static_cast<int64_t>(t.gmc[m.template_row[static_cast<size_t>(c)]]) + delta;
          no_op[i] = (peer_chunk >= total_chunks || peer_chunk < 0) ? 1 : 0;
          match[i] = c;
          ++compute_id;
        }
      }
    }

    // Pair valid ops by their rank among the valid ops of their type.
    for (const OpType ot : {OpType::kForwardSend, OpType::kForwardRecv, OpType::kBackwardSend,
                            OpType::kBackwardRecv}) {
      int32_t valid_id = 0;
      for (size_t i = 0; i < comm.size(); ++i) {
        const size_t r = comm[i];
        if (t.optype[r] != ot || no_op[i]) continue;
        const int32_t peer_s = (peer_stage_delta(ot) + s + pp) % pp;
        std::string a = ModelSkeleton::name(ot, valid_id, s);
        std::string b = ModelSkeleton::name(peer_type(ot), valid_id, peer_s);
        if (b < a) std::swap(a, b);
        pairs[a + "," + b].push_back(m.find(ot, t.seq_id[r], s));
        ++valid_id;
      }
    }
    for (size_t i = 0; i < comm.size(); ++i) {
      if (no_op[i]) no_ops.push_back(m.find(t.optype[comm[i]], t.seq_id[comm[i]], s));
    }

    // Compute <-> p2p: a send waits for its compute; a recv feeds its compute and is posted
    // after the previous compute of the same direction.
    for (size_t i = 0; i < comm.size(); ++i) {
      if (match[i] < 0) continue;
      const size_t r = comm[i];
      const int32_t op = m.find(t.optype[r], t.seq_id[r], s);
      const bool is_send = t.optype[r] == OpType::kForwardSend || t.optype[r] == OpType::kBackwardSend;
      if (is_send) {
        m.add_dep(op, match[i]);
      } else {
        m.add_dep(match[i], op);
        const int32_t c = match[i];
        const int32_t prev_seq = m.seq_id[static_cast<size_t>(c)] - 1;
        if (prev_seq >= 0) {
          m.add_dep(op, m.require(m.optype[static_cast<size_t>(c)], prev_seq, s,
                                  "the compute before a pipeline recv"));
        }
      }
    }
  }

  for (auto& [key, members] : pairs) {
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

}  // namespace sp::whatif
