// Structural invariants of generated traces, over a range of job shapes: the rules the what-if
// analysis relies on (counts, seq_id order, one operation at a time per stream, pipeline
// send/recv matching and pairing, collectives consistent across their participants).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "straggler_probe/whatif/synthetic_trace.h"
#include "trace_view.h"

namespace sp::whatif {
namespace {

using testing::end_of;
using testing::TraceView;

// float32 rounding of times of a few seconds, plus the artifact's 5e-5 s matching slack.
constexpr double kTol = 5e-5;

struct Shape {
  int dp, pp, vpp, mb, dsp;
  bool overlap;
};

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return "dp" + std::to_string(s.dp) + "_pp" + std::to_string(s.pp) + "_vpp" +
         std::to_string(s.vpp) + "_mb" + std::to_string(s.mb) + "_dsp" + std::to_string(s.dsp) +
         (s.overlap ? "_overlap" : "");
}

class GeneratorShapes : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    const Shape& s = GetParam();
    spec_.dp_size = s.dp;
    spec_.pp_size = s.pp;
    spec_.vpp_size = s.vpp;
    spec_.micro_batches = s.mb;
    spec_.dsp_size = s.dsp;
    spec_.overlap_grad_reduce = s.overlap;
    spec_.steps = 3;
    spec_.first_step = 5;
    spec_.seqlen_sigma = 0.3;
    spec_.gc_probability = 0.2;
    spec_.slow_workers.push_back({s.dp - 1, s.pp - 1, 1.4});
    trace_ = generate_synthetic_trace(spec_);
  }

  bool uses_dp() const { return spec_.dp_size * spec_.dsp_size > 1; }

  SyntheticJobSpec spec_;
  SyntheticTrace trace_;
};

TEST_P(GeneratorShapes, CountsPerWorkerAndStep) {
  const Shape& s = GetParam();
  const TraceTable& t = trace_.table;
  const TraceView view(t);
  ASSERT_EQ(view.by_worker.size(), static_cast<size_t>(3 * s.dp * s.pp));
  for (const auto& [key, rows] : view.by_worker) {
    const int stage = std::get<2>(key);
    const bool first = stage == 0;
    const bool last = stage == s.pp - 1;
    std::map<OpType, int> n;
    for (size_t r : rows) ++n[t.optype[r]];
    const int computes = s.mb * s.vpp;
    EXPECT_EQ(n[OpType::kForwardCompute], computes);
    EXPECT_EQ(n[OpType::kBackwardCompute], computes);
    if (s.vpp == 1) {  // Megatron skips the calls without a peer
      EXPECT_EQ(n[OpType::kForwardRecv], first ? 0 : s.mb);
      EXPECT_EQ(n[OpType::kBackwardSend], first ? 0 : s.mb);
      EXPECT_EQ(n[OpType::kForwardSend], last ? 0 : s.mb);
      EXPECT_EQ(n[OpType::kBackwardRecv], last ? 0 : s.mb);
    } else {  // one send and one recv record per compute, no-ops included
      for (OpType p : {OpType::kForwardRecv, OpType::kForwardSend, OpType::kBackwardRecv,
                       OpType::kBackwardSend}) {
        EXPECT_EQ(n[p], computes) << op_type_name(p);
      }
    }
    EXPECT_EQ(n[OpType::kParamsAllGather], uses_dp() ? s.vpp : 0);
    EXPECT_EQ(n[OpType::kGradsReduceScatter], uses_dp() ? s.vpp : 0);
    EXPECT_EQ(n[OpType::kSeparateGradsAllReduce], uses_dp() && s.overlap ? 1 : 0);
    EXPECT_EQ(n[OpType::kLayernormGradsAllReduce], 1);
    EXPECT_EQ(n[OpType::kEmbeddingGradsAllReduce], first || last ? 1 : 0);
    EXPECT_EQ(n[OpType::kOptimizerClipMainGrad], 1);
    EXPECT_EQ(n[OpType::kOptimizer], 1);
    EXPECT_EQ(n[OpType::kGc], 1);
  }
}

TEST_P(GeneratorShapes, SeqIdsNumberEachOpTypeByStartTime) {
  const TraceTable& t = trace_.table;
  const TraceView view(t);
  for (const auto& [key, rows] : view.by_worker) {
    for (int ti = 0; ti < kNumOpTypes; ++ti) {
      const auto typed = TraceView::of_type(t, rows, static_cast<OpType>(ti));
      for (size_t i = 0; i < typed.size(); ++i) {
        ASSERT_EQ(t.seq_id[typed[i]], static_cast<int32_t>(i)) << op_type_name(static_cast<OpType>(ti));
      }
    }
  }
}

TEST_P(GeneratorShapes, ComputeMetadataFollowsTheSchema) {
  const TraceTable& t = trace_.table;
  for (size_t i = 0; i < t.size(); ++i) {
    ASSERT_GE(t.duration[i], 0.0);
    ASSERT_EQ(t.step[i] >= 5 && t.step[i] < 8, true);
    if (is_compute(t.optype[i])) {
      ASSERT_GE(t.mc[i], 0);
      ASSERT_LT(t.mc[i], GetParam().vpp);
      ASSERT_EQ(t.gmc[i], t.mc[i] * GetParam().pp + t.stage[i]);
      ASSERT_GE(t.mb_id[i], 0);
      ASSERT_LT(t.mb_id[i], GetParam().mb);
    } else {
      ASSERT_EQ(t.gmc[i], -1);
    }
  }
}

// Each stream of a worker runs one call at a time: the main stream (compute, blocking calls),
// the DP stream (all-gathers and overlapped reduce-scatters) and, in the interleaved
// schedule, one stream per kind of asynchronous p2p call. Records of one batched call share
// start and duration.
TEST_P(GeneratorShapes, EachStreamRunsOneCallAtATime) {
  const TraceTable& t = trace_.table;
  const TraceView view(t);
  auto stream_of = [&](OpType op) {
    if (op == OpType::kParamsAllGather) return 1;
    if (op == OpType::kGradsReduceScatter && GetParam().overlap) return 1;
    if (is_p2p(op) && GetParam().vpp > 1) {
      return 2 + static_cast<int>(op) - static_cast<int>(OpType::kForwardSend);
    }
    return 0;
  };
  for (const auto& [key, rows] : view.by_worker) {
    double prev_start[6] = {-1, -1, -1, -1, -1, -1};
    double prev_end[6] = {-1, -1, -1, -1, -1, -1};
    for (size_t r : rows) {
      const OpType op = t.optype[r];
      const int s = stream_of(op);
      if (t.start_ts[r] == prev_start[s] && end_of(t, r) == prev_end[s]) continue;  // same batch
      ASSERT_GE(t.start_ts[r], prev_end[s] - kTol) << op_type_name(op);
      prev_start[s] = t.start_ts[r];
      prev_end[s] = end_of(t, r);
    }
  }
}

// The analysis pairs the i-th recv of a direction with the i-th compute of that direction and
// the i-th send likewise; then the k-th real send of a stage with the k-th real recv of its
// peer. Check the timing behind the first rule and that the second pairs the right tensors.
TEST_P(GeneratorShapes, PipelineSendRecvMatchComputesAndPairCorrectly) {
  const Shape& s = GetParam();
  const int chunks = s.pp * s.vpp;
  const TraceTable& t = trace_.table;
  const TraceView view(t);
  struct Matched {
    size_t op_row;
    size_t compute_row;
  };
  // (step, dp, stage, p2p type) -> matched ops that have a peer, in order.
  std::map<std::tuple<int64_t, int32_t, int32_t, OpType>, std::vector<Matched>> real;
  for (const auto& [key, rows] : view.by_worker) {
    for (bool forward : {true, false}) {
      const auto computes = TraceView::of_type(
          t, rows, forward ? OpType::kForwardCompute : OpType::kBackwardCompute);
      const auto recvs =
          TraceView::of_type(t, rows, forward ? OpType::kForwardRecv : OpType::kBackwardRecv);
      const auto sends =
          TraceView::of_type(t, rows, forward ? OpType::kForwardSend : OpType::kBackwardSend);
      for (size_t i = 0; i < recvs.size(); ++i) {
        ASSERT_EQ(recvs.size(), computes.size());
        ASSERT_LE(end_of(t, recvs[i]), t.start_ts[computes[i]] + kTol);
        if (i > 0) {
          ASSERT_GE(t.start_ts[recvs[i]], end_of(t, computes[i - 1]) - kTol);
        }
        const int g = t.gmc[computes[i]];
        if (forward ? g != 0 : g != chunks - 1) {
          real[{std::get<0>(key), std::get<1>(key), std::get<2>(key), t.optype[recvs[i]]}]
              .push_back({recvs[i], computes[i]});
        }
      }
      for (size_t i = 0; i < sends.size(); ++i) {
        ASSERT_EQ(sends.size(), computes.size());
        ASSERT_GE(t.start_ts[sends[i]], end_of(t, computes[i]) - kTol);
        const int g = t.gmc[computes[i]];
        if (forward ? g != chunks - 1 : g != 0) {
          real[{std::get<0>(key), std::get<1>(key), std::get<2>(key), t.optype[sends[i]]}]
              .push_back({sends[i], computes[i]});
        }
      }
    }
  }
  size_t pairs = 0;
  for (const auto& [key, sends] : real) {
    const auto [step, dp, stage, type] = key;
    if (type != OpType::kForwardSend && type != OpType::kBackwardSend) continue;
    const bool forward = type == OpType::kForwardSend;
    const int peer = (stage + (forward ? 1 : -1) + s.pp) % s.pp;
    const auto found =
        real.find({step, dp, peer, forward ? OpType::kForwardRecv : OpType::kBackwardRecv});
    ASSERT_NE(found, real.end());
    const auto& recvs = found->second;
    ASSERT_EQ(sends.size(), recvs.size());
    for (size_t k = 0; k < sends.size(); ++k) {
      const size_t sc = sends[k].compute_row;
      const size_t rc = recvs[k].compute_row;
      ASSERT_EQ(t.mb_id[sc], t.mb_id[rc]);                  // the same micro-batch...
      ASSERT_EQ(t.gmc[rc], t.gmc[sc] + (forward ? 1 : -1));  // ...to the adjacent chunk
      const double both_started =
          std::max(t.start_ts[sends[k].op_row], t.start_ts[recvs[k].op_row]);
      ASSERT_GE(end_of(t, sends[k].op_row), both_started - kTol);
      ASSERT_GE(end_of(t, recvs[k].op_row), both_started - kTol);
      ++pairs;
    }
  }
  const size_t expected = static_cast<size_t>(3 * s.dp) * 2 * static_cast<size_t>(s.mb) *
                          static_cast<size_t>(chunks - 1);
  EXPECT_EQ(pairs, expected);
}

// A collective ends at (latest participant's start) + transfer, for everyone alike.
TEST_P(GeneratorShapes, CollectivesEndTogetherAfterTheLastParticipantStarts) {
  const TraceTable& t = trace_.table;
  // (step, op type, group, seq_id) -> rows
  std::map<std::tuple<int64_t, OpType, int32_t, int32_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < t.size(); ++i) {
    const OpType op = t.optype[i];
    int32_t group = -1;
    if (is_dp_comm(op)) {
      group = t.stage[i];  // across dp ranks of a stage
    } else if (op == OpType::kEmbeddingGradsAllReduce) {
      group = t.dp_rank[i];  // first and last stage of a dp rank
    } else if (op != OpType::kOptimizerClipMainGrad) {
      continue;  // clip: everyone
    }
    groups[{t.step[i], op, group, t.seq_id[i]}].push_back(i);
  }
  ASSERT_FALSE(groups.empty());
  const Shape& s = GetParam();
  for (const auto& [key, rows] : groups) {
    const OpType op = std::get<1>(key);
    const size_t expected = op == OpType::kOptimizerClipMainGrad ? static_cast<size_t>(s.dp * s.pp)
                            : op == OpType::kEmbeddingGradsAllReduce ? (s.pp > 1 ? 2U : 1U)
                                                                     : static_cast<size_t>(s.dp);
    ASSERT_EQ(rows.size(), expected) << op_type_name(op);
    double latest_start = 0;
    for (size_t r : rows) latest_start = std::max(latest_start, t.start_ts[r]);
    const double end0 = end_of(t, rows.front());
    for (size_t r : rows) {
      ASSERT_GT(end_of(t, r), latest_start - kTol) << op_type_name(op);
      ASSERT_NEAR(end_of(t, r), end0, kTol) << op_type_name(op);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GeneratorShapes,
    ::testing::Values(Shape{1, 1, 1, 4, 1, false},   // no parallelism at all
                      Shape{1, 1, 1, 3, 2, true},    // context parallel only: DP collectives
                      Shape{2, 4, 1, 4, 1, false},   // the ST reference's shape
                      Shape{3, 4, 1, 2, 1, false},   // fewer micro-batches than stages
                      Shape{4, 2, 1, 1, 1, true},    // a single micro-batch
                      Shape{2, 8, 1, 16, 2, true},
                      Shape{2, 4, 2, 8, 1, false},   // interleaved
                      Shape{3, 4, 2, 4, 1, true},    // interleaved, micro-batches == pp
                      Shape{2, 2, 4, 6, 1, true},
                      Shape{2, 3, 3, 9, 1, false}),
    shape_name);

}  // namespace
}  // namespace sp::whatif
