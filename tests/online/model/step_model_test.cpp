// The op model built from summaries: host-chain segmentation, DDP waits, nested GC pauses,
// matching of collectives and p2p, launch delays.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/step_model_builder.h"
#include "summary_builders.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using testing::kMs;
using testing::kT0;

sp_event ev(uint32_t kind, uint64_t start_ms, uint64_t end_ms, int mb = -1) {
  return testing::timed_op(kind, start_ms, end_ms, mb);
}

sp_event coll(uint64_t start_ms, uint64_t end_ms, uint64_t seq, int size) {
  return testing::all_reduce_op(start_ms, end_ms, 7, seq, size);
}

runtime::StepSummary summary(int rank, int world, std::vector<sp_event> ops) {
  return testing::rank_summary(rank, world, std::move(ops));
}

sp_event p2p(uint32_t kind, uint64_t start_ms, uint64_t end_ms, int peer, int mb) {
  sp_event e = testing::timed_op(kind, start_ms, end_ms, mb);
  e.peer = peer;
  e.coll = kind == SP_OP_SEND ? SP_COLL_SEND : SP_COLL_RECV;
  e.bytes = 4096;
  return e;
}

const Node& first_node(const StepModel& m, const LogicalOp* op) {
  return m.nodes[static_cast<size_t>(op->first_node)];
}

const LogicalOp* find_op(const StepModel& m, int rank, uint32_t kind) {
  for (const LogicalOp& op : m.ops) {
    if (op.rank == rank && op.kind == kind) return &op;
  }
  return nullptr;
}

std::optional<StepModel> build(const std::vector<runtime::StepSummary>& ss, std::string* err) {
  return build_step_model(testing::summary_ptrs(ss), ModelOptions{}, err);
}

TEST(OnlineStepModel, BackwardWaitingForItsBucketsIsNotCompute) {
  // Rank 0 computes backward 10..30 ms and launches the all-reduce at 30; rank 1 launches it at
  // 50, so it ends at 55 and rank 0's backward (which waits for it) ends at 56.
  std::vector<runtime::StepSummary> ss = {
      summary(0, 2, {ev(SP_OP_FORWARD, 0, 10, 0), ev(SP_OP_BACKWARD, 10, 56, 0), coll(30, 55, 1, 2)}),
      summary(1, 2, {ev(SP_OP_FORWARD, 0, 20, 0), ev(SP_OP_BACKWARD, 20, 56, 0), coll(50, 55, 1, 2)}),
  };
  std::string err;
  auto m = build(ss, &err);
  ASSERT_TRUE(m) << err;
  // Own backward time: 20 ms of compute + 1 ms after the wait on rank 0; 30 + 1 on rank 1.
  EXPECT_NEAR(find_op(*m, 0, SP_OP_BACKWARD)->own, 0.021, 1e-9);
  EXPECT_NEAR(find_op(*m, 1, SP_OP_BACKWARD)->own, 0.031, 1e-9);
  // Transfer = end - latest start = 5 ms on both.
  EXPECT_NEAR(find_op(*m, 0, SP_OP_COLLECTIVE)->own, 0.005, 1e-9);
  EXPECT_NEAR(find_op(*m, 1, SP_OP_COLLECTIVE)->own, 0.005, 1e-9);
  ASSERT_EQ(m->groups.size(), 1u);
  EXPECT_EQ(m->clamped, 0u);
  for (const Node& n : m->nodes) EXPECT_GE(n.launch_delay, 0.0);
}

TEST(OnlineStepModel, LateNoticeOfAnAllReduceIsHostDelayNotTransfer) {
  // Both ranks launch by 50 ms; rank 0 sees the result at 55, rank 1 only at 58 (its callback
  // waited), then runs the optimizer from 58.5.
  std::vector<runtime::StepSummary> ss = {
      summary(0, 2, {ev(SP_OP_BACKWARD, 0, 50, 0), coll(50, 55, 1, 2), ev(SP_OP_OPTIMIZER, 56, 60)}),
      summary(1, 2, {ev(SP_OP_BACKWARD, 0, 50, 0), coll(50, 58, 1, 2), ev(SP_OP_OPTIMIZER, 59, 60)}),
  };
  ss[1].ops[1].start_ns -= kMs / 2;  // launched at 49.5
  ss[1].ops[2].start_ns -= kMs / 2;  // optimizer from 58.5
  std::string err;
  auto m = build(ss, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_NEAR(find_op(*m, 0, SP_OP_COLLECTIVE)->own, 0.005, 1e-9);
  EXPECT_NEAR(find_op(*m, 1, SP_OP_COLLECTIVE)->own, 0.005, 1e-9);
  const LogicalOp* opt = find_op(*m, 1, SP_OP_OPTIMIZER);
  EXPECT_NEAR(m->nodes[static_cast<size_t>(opt->first_node)].launch_delay, 0.0035, 1e-9);
}

TEST(OnlineStepModel, AnAsyncSendWaitedForLateIsNotTransfer) {
  // GPipe's way: stage 0 sends micro-batch 0 async at 10 ms and waits for it only after its
  // next forward, at 40; stage 1 posted the receive at 0 and had the data at 12.
  std::vector<runtime::StepSummary> ss = {
      summary(0, 2, {ev(SP_OP_FORWARD, 0, 10, 0), p2p(SP_OP_SEND, 10, 40, 1, 0),
                     ev(SP_OP_FORWARD, 11, 39, 1)}),
      summary(1, 2, {p2p(SP_OP_RECV, 0, 12, 0, 0), ev(SP_OP_FORWARD, 12, 30, 0)}),
  };
  ss[0].pp_stage = 0;
  ss[1].pp_stage = 1;
  std::string err;
  auto m = build(ss, &err);
  ASSERT_TRUE(m) << err;
  // Both sides: the transfer is over when the data has arrived (12), 2 ms after the later issue.
  EXPECT_NEAR(find_op(*m, 0, SP_OP_SEND)->own, 0.002, 1e-9);
  EXPECT_NEAR(find_op(*m, 1, SP_OP_RECV)->own, 0.002, 1e-9);
  EXPECT_NEAR(first_node(*m, find_op(*m, 0, SP_OP_SEND)).end, 0.012, 1e-9);
  EXPECT_EQ(m->clamped, 0u);
}

TEST(OnlineStepModel, AReceiveIssuedAfterABlockingSendWaitsForIt) {
  // Stage 1 of a hand-written pipeline: blocking send of micro-batch 0's activations (10-14),
  // then the receive of micro-batch 1 (from 14.x): the receive waited for the send, so its
  // launch delay is the gap, not the send.
  std::vector<runtime::StepSummary> ss = {
      summary(0, 3, {p2p(SP_OP_SEND, 0, 1, 1, 0), p2p(SP_OP_SEND, 1, 15, 1, 1)}),
      summary(1, 3, {p2p(SP_OP_RECV, 0, 1, 0, 0), ev(SP_OP_FORWARD, 1, 10, 0),
                     p2p(SP_OP_SEND, 10, 14, 2, 0), p2p(SP_OP_RECV, 14, 15, 0, 1)}),
      summary(2, 3, {p2p(SP_OP_RECV, 13, 14, 1, 0)}),
  };
  for (int r = 0; r < 3; ++r) ss[static_cast<size_t>(r)].pp_stage = r;
  ss[1].ops[3].start_ns += testing::kMs / 4;  // issued 0.25 ms after the send returned
  std::string err;
  auto m = build(ss, &err);
  ASSERT_TRUE(m) << err;
  const LogicalOp* recv1 = nullptr;
  for (const LogicalOp& op : m->ops) {
    if (op.rank == 1 && op.kind == SP_OP_RECV && op.microbatch == 1) recv1 = &op;
  }
  ASSERT_NE(recv1, nullptr);
  const LogicalOp* send = find_op(*m, 1, SP_OP_SEND);
  const Node& n = first_node(*m, recv1);
  EXPECT_NE(std::find(n.deps.begin(), n.deps.end(), send->first_node), n.deps.end());
  EXPECT_NEAR(n.launch_delay, 0.00025, 1e-9);
}

TEST(OnlineStepModel, NestedGcPauseIsItsOwnOp) {
  std::vector<runtime::StepSummary> ss = {
      summary(0, 1, {ev(SP_OP_FORWARD, 0, 50, 0), ev(SP_OP_GC, 10, 40), ev(SP_OP_BACKWARD, 51, 70, 0)}),
  };
  std::string err;
  auto m = build(ss, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_NEAR(find_op(*m, 0, SP_OP_FORWARD)->own, 0.020, 1e-9);
  EXPECT_NEAR(find_op(*m, 0, SP_OP_GC)->own, 0.030, 1e-9);
  EXPECT_NEAR(m->time_s, 0.070, 1e-9);
  // Launch delay of backward: 1 ms after forward.
  const LogicalOp* bwd = find_op(*m, 0, SP_OP_BACKWARD);
  EXPECT_NEAR(m->nodes[static_cast<size_t>(bwd->first_node)].launch_delay, 0.001, 1e-9);
}

TEST(OnlineStepModel, P2pPairsAreMatchedInOrderAndNamedByDirection) {
  testing::SyntheticJob job;
  job.dp = 1;
  job.pp = 2;
  job.microbatches = 3;
  const testing::SyntheticRun run = testing::run_synthetic(job, 1);
  std::string err;
  auto m = build(run.steps[0], &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->groups.size(), 6u);  // 3 activations forward + 3 gradients backward
  std::vector<std::string> names = m->type_names;
  for (const char* t : {"forward-send", "forward-recv", "backward-send", "backward-recv"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), t), names.end()) << t;
  }
  EXPECT_EQ(m->pp_size, 2);
  EXPECT_NEAR(m->time_s, run.step_time_s[0], 1e-6);
}

TEST(OnlineStepModel, ClockOffsetsAreApplied) {
  testing::SyntheticJob job;
  job.microbatches = 2;
  const testing::SyntheticRun run = testing::run_synthetic(job, 1);
  std::vector<runtime::StepSummary> shifted = run.steps[0];
  // Rank 2's clock runs 7 ms ahead; its summary says so.
  runtime::StepSummary& s = shifted[2];
  for (sp_event& e : s.ops) {
    e.start_ns += 7 * kMs;
    e.end_ns += 7 * kMs;
  }
  s.step_start_ns += 7 * kMs;
  s.step_end_ns += 7 * kMs;
  s.clock_offset_ns = -7 * static_cast<int64_t>(kMs);
  std::string err;
  auto a = build(run.steps[0], &err);
  auto b = build(shifted, &err);
  ASSERT_TRUE(a && b) << err;
  EXPECT_NEAR(a->time_s, b->time_s, 1e-9);
  ASSERT_EQ(a->ops.size(), b->ops.size());
  for (size_t i = 0; i < a->ops.size(); ++i) EXPECT_NEAR(a->ops[i].own, b->ops[i].own, 1e-9);
}

TEST(OnlineStepModel, LaunchDelaysAreNonNegativeOnASyntheticDdpJob) {
  testing::SyntheticJob job;
  job.microbatches = 2;
  job.rank_speed = {1.0, 1.0, 1.3, 1.0};
  const testing::SyntheticRun run = testing::run_synthetic(job, 2);
  std::string err;
  auto m = build(run.steps[1], &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->clamped, 0u);
  EXPECT_EQ(m->groups.size(), 2u);
  // Fast ranks' backward own time excludes waiting for rank 2's buckets.
  auto last_backward = [&](int rank) {
    const LogicalOp* found = nullptr;
    for (const LogicalOp& op : m->ops) {
      if (op.rank == rank && op.kind == SP_OP_BACKWARD && op.microbatch == 1) found = &op;
    }
    return found;
  };
  ASSERT_NE(last_backward(0), nullptr);
  ASSERT_NE(last_backward(2), nullptr);
  EXPECT_NEAR(last_backward(0)->own, job.backward_s + job.finalize_s, 1e-6);
  EXPECT_NEAR(last_backward(2)->own, 1.3 * job.backward_s + job.finalize_s, 1e-6);
}

}  // namespace
}  // namespace sp::online
