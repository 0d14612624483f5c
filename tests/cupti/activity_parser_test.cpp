// The record parser on synthetic CUDA 13 buffers: every record kind, external correlations
// before, after and in later windows than their kernels, foreign correlation kinds, zero
// timestamps, unknown and truncated records.
#include <gtest/gtest.h>

#include <vector>

#ifdef SP_HAVE_CUPTI_HEADERS
#include <cupti.h>
#endif

#include "records/activity_parser.h"
#include "loader/cupti_records.h"
#include "straggler_probe/gpu/external_ids.h"
#include "straggler_probe/probe.h"
#include "synthetic_activity_buffer.h"

namespace sp::cupti {
namespace {

using testing::SyntheticActivityBuffer;

std::vector<GpuActivity> parse(ActivityParser& p, std::vector<SyntheticActivityBuffer*> bufs) {
  std::vector<BufferView> views;
  for (auto* b : bufs) views.push_back(BufferView{b->data(), b->size()});
  Cupti13RecordIterator it;
  std::vector<GpuActivity> out;
  p.parse_window(views, it, out);
  return out;
}

const GpuActivity* find_corr(const std::vector<GpuActivity>& v, uint32_t corr) {
  for (const auto& a : v) {
    if (a.correlation == corr) return &a;
  }
  return nullptr;
}

TEST(ActivityParser, DecodesEveryKindWithItsFields) {
  SyntheticActivityBuffer b;
  b.kernel(1000, 2000, 11, "gemm_kernel", 3, 1)
      .memcpy_rec(3000, 3500, 12, 4096, 1)
      .memset_rec(4000, 4100, 13, 256)
      .sync(5000, 6000, 14, 3 /*stream synchronize*/)
      .cuda_event(7000, 15, 42)
      .api(kKindDriver, 652, 11);
  ActivityParser p(ParserOptions{.hold_windows = 0});
  auto out = parse(p, {&b});
  ASSERT_EQ(out.size(), 5u);

  const GpuActivity* k = find_corr(out, 11);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, GpuActivity::Type::kKernel);
  EXPECT_EQ(k->start, 1000u);
  EXPECT_EQ(k->end, 2000u);
  EXPECT_STREQ(k->name, "gemm_kernel");
  EXPECT_EQ(k->stream, 3u);
  EXPECT_EQ(k->device, 1u);

  const GpuActivity* m = find_corr(out, 12);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->type, GpuActivity::Type::kMemcpy);
  EXPECT_EQ(m->bytes, 4096u);
  EXPECT_EQ(m->subtype, 1u);

  const GpuActivity* ms = find_corr(out, 13);
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(ms->type, GpuActivity::Type::kMemset);
  EXPECT_EQ(ms->bytes, 256u);

  const GpuActivity* s = find_corr(out, 14);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->type, GpuActivity::Type::kSync);
  EXPECT_EQ(s->subtype, 3u);
  EXPECT_EQ(s->end - s->start, 1000u);

  const GpuActivity* e = find_corr(out, 15);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type, GpuActivity::Type::kCudaEvent);
  EXPECT_EQ(e->start, 7000u);
  EXPECT_EQ(e->event_id, 42u);

  EXPECT_EQ(p.stats().records, 6u);
  EXPECT_EQ(p.stats().api_records, 1u);
}

TEST(ActivityParser, JoinsExternalCorrelationBeforeOrAfterTheKernelInOneWindow) {
  const uint64_t fwd = gpu::encode_region_id({SP_OP_FORWARD, 0, 5}, 1);
  const uint64_t bwd = gpu::encode_region_id({SP_OP_BACKWARD, 0, 6}, 2);
  SyntheticActivityBuffer a, b;
  a.external(kExternalKindCustom2, fwd, 21).kernel(100, 200, 21, "k1");  // correlation first
  a.kernel(300, 400, 22, "k2");                                          // kernel first...
  b.external(kExternalKindCustom2, bwd, 22);                             // ...its tag in buffer b
  ActivityParser p;
  auto out = parse(p, {&a, &b});
  ASSERT_EQ(out.size(), 2u);
  const GpuActivity* k1 = find_corr(out, 21);
  const GpuActivity* k2 = find_corr(out, 22);
  ASSERT_TRUE(k1 != nullptr && k2 != nullptr);
  EXPECT_EQ(k1->external_id, fwd);
  EXPECT_EQ(k2->external_id, bwd);
  EXPECT_EQ(p.pending_activities(), 0u);
  EXPECT_EQ(p.pending_correlations(), 0u);
}

TEST(ActivityParser, HoldsAnUnmatchedKernelUntilItsCorrelationArrivesInALaterWindow) {
  const uint64_t id = gpu::encode_region_id({SP_OP_OPTIMIZER, -1, 9}, 3);
  SyntheticActivityBuffer w1, w2;
  w1.kernel(100, 200, 31, "adam");
  w2.external(kExternalKindCustom2, id, 31);
  ActivityParser p;
  auto out1 = parse(p, {&w1});
  EXPECT_TRUE(out1.empty()) << "an untagged kernel waits one window for its tag";
  EXPECT_EQ(p.pending_activities(), 1u);
  auto out2 = parse(p, {&w2});
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(out2[0].external_id, id);
  EXPECT_EQ(p.stats().matched_late, 1u);
}

TEST(ActivityParser, KeepsACorrelationForAKernelThatCompletesInALaterWindow) {
  const uint64_t id = gpu::encode_region_id({SP_OP_FORWARD, 2, 1}, 4);
  SyntheticActivityBuffer w1, w2;
  w1.external(kExternalKindCustom2, id, 41).api(kKindRuntime, 211, 41);
  w2.kernel(500, 900, 41, "late_kernel");
  ActivityParser p;
  EXPECT_TRUE(parse(p, {&w1}).empty());
  EXPECT_EQ(p.pending_correlations(), 1u);
  auto out = parse(p, {&w2});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].external_id, id);
}

// Issue 11: every kernel of a CUDA graph launch carries the launch's one correlation id; all of
// them are tagged, also when they arrive over several windows or before the correlation record,
// while a plain launch's correlation is used up by its one kernel.
TEST(ActivityParser, TagsEveryKernelOfAGraphLaunchNotOnlyTheFirst) {
  const uint64_t id = gpu::encode_region_id({SP_OP_FORWARD, 0, 5}, 2);
  SyntheticActivityBuffer w1, w2, w3, w4;
  w1.external(kExternalKindCustom2, id, 61).api(kKindRuntime, 311 /*cudaGraphLaunch*/, 61)
      .kernel(100, 200, 61, "graph_gemm", 7, 0, 9)
      .kernel(210, 300, 61, "graph_gelu", 7, 0, 9);
  w2.kernel(310, 400, 61, "graph_gemm", 7, 0, 9);
  w3.kernel(410, 500, 61, "graph_norm", 7, 0, 9);
  w4.kernel(600, 700, 61, "graph_gemm", 7, 0, 9);  // long after the replay: expired
  ActivityParser p;
  auto out = parse(p, {&w1});
  for (auto* w : {&w2, &w3}) {
    auto more = parse(p, {w});
    out.insert(out.end(), more.begin(), more.end());
  }
  ASSERT_EQ(out.size(), 4u);
  for (const auto& a : out) {
    EXPECT_EQ(a.external_id, id) << a.name << " at " << a.start;
    EXPECT_EQ(a.graph_id, 9u);
  }
  EXPECT_EQ(p.stats().graph_activities, 4u);
  ActivityParser idle_for_two = p;
  SyntheticActivityBuffer empty;
  parse(idle_for_two, {&empty});
  parse(idle_for_two, {&empty});
  auto late = parse(idle_for_two, {&w4});
  auto rest = late;
  idle_for_two.drain(rest);
  ASSERT_EQ(rest.size(), 1u);
  for (const auto& a : rest) EXPECT_EQ(a.external_id, 0u) << "the correlation expired with the replay";

  // Kernels of a replay that come before the correlation record: all tagged when it arrives.
  SyntheticActivityBuffer k1, c1;
  k1.kernel(100, 200, 71, "graph_a", 7, 0, 3).kernel(200, 300, 71, "graph_b", 7, 0, 3);
  c1.external(kExternalKindCustom2, id, 71);
  ActivityParser q;
  EXPECT_TRUE(parse(q, {&k1}).empty());
  auto tagged = parse(q, {&c1});
  ASSERT_EQ(tagged.size(), 2u);
  for (const auto& a : tagged) EXPECT_EQ(a.external_id, id);

  // A plain launch's correlation is used up by its kernel.
  SyntheticActivityBuffer plain;
  plain.external(kExternalKindCustom2, id, 81).kernel(100, 200, 81, "plain");
  ActivityParser r;
  ASSERT_EQ(parse(r, {&plain}).size(), 1u);
  EXPECT_EQ(r.pending_correlations(), 0u);
}

TEST(ActivityParser, ReleasesUntaggedKernelsAfterTheHoldTime) {
  SyntheticActivityBuffer w1, empty;
  w1.kernel(100, 200, 51, "outside_any_region");
  ActivityParser p(ParserOptions{.hold_windows = 1});
  EXPECT_TRUE(parse(p, {&w1}).empty());
  auto out = parse(p, {&empty});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].external_id, 0u);
  EXPECT_EQ(p.stats().released_untagged, 1u);
}

TEST(ActivityParser, ExpiresCorrelationsWhoseActivityNeverComes) {
  SyntheticActivityBuffer w1, empty;
  w1.external(kExternalKindCustom2, 77, 61);
  ActivityParser p(ParserOptions{.hold_windows = 1});
  parse(p, {&w1});
  parse(p, {&empty});
  parse(p, {&empty});
  EXPECT_EQ(p.pending_correlations(), 0u);
  EXPECT_EQ(p.stats().expired_correlations, 1u);
}

TEST(ActivityParser, IgnoresPyTorchsCorrelationKinds) {
  SyntheticActivityBuffer b;
  b.external(kExternalKindCustom0, 1234, 71).kernel(1, 2, 71, "k");
  ActivityParser p(ParserOptions{.hold_windows = 0});
  auto out = parse(p, {&b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].external_id, 0u) << "CUSTOM0 is Kineto's, not ours";
  EXPECT_EQ(p.stats().foreign_external_correlations, 1u);
}

TEST(ActivityParser, SkipsRecordsCuptiCouldNotTime) {
  SyntheticActivityBuffer b;
  b.kernel(0, 0, 81, "untimed").kernel(10, 20, 82, "timed");
  ActivityParser p(ParserOptions{.hold_windows = 0});
  auto out = parse(p, {&b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].correlation, 82u);
  EXPECT_EQ(p.stats().zero_timestamps, 1u);
}

TEST(ActivityParser, StopsCleanlyAtAnUnknownKindAndATruncatedRecord) {
  SyntheticActivityBuffer b;
  b.kernel(10, 20, 91, "before").raw(12 /*MARKER*/, 48).kernel(30, 40, 92, "after");
  ActivityParser p(ParserOptions{.hold_windows = 0});
  auto out = parse(p, {&b});
  ASSERT_EQ(out.size(), 1u) << "our walker cannot size a kind it does not know: it stops";
  EXPECT_EQ(out[0].correlation, 91u);
  EXPECT_EQ(p.stats().buffers_stopped_early, 1u);

  SyntheticActivityBuffer t;
  t.kernel(10, 20, 93, "whole");
  std::vector<BufferView> views{BufferView{t.data(), t.size() - 8}};
  Cupti13RecordIterator it;
  std::vector<GpuActivity> out2;
  ActivityParser p2(ParserOptions{.hold_windows = 0});
  p2.parse_window(views, it, out2);
  EXPECT_TRUE(out2.empty());
  EXPECT_EQ(p2.stats().buffers_stopped_early, 1u);
}

TEST(ActivityParser, DrainReleasesEverythingHeld) {
  SyntheticActivityBuffer b;
  b.kernel(1, 2, 101, "a").kernel(3, 4, 102, "b");
  ActivityParser p;
  EXPECT_TRUE(parse(p, {&b}).empty());
  std::vector<GpuActivity> out;
  p.drain(out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(p.pending_activities(), 0u);
}

TEST(ActivityParser, BoundsThePendingTables) {
  SyntheticActivityBuffer b;
  for (uint32_t i = 0; i < 10; ++i) b.kernel(10 + i, 20 + i, 200 + i, "k");
  ParserOptions o;
  o.max_pending_activities = 4;
  ActivityParser p(o);
  auto out = parse(p, {&b});
  EXPECT_EQ(p.pending_activities(), 4u);
  EXPECT_EQ(out.size(), 6u) << "overflow is released untagged, not lost";
  EXPECT_EQ(p.stats().evicted, 6u);
}

#ifdef SP_HAVE_CUPTI_HEADERS
TEST(ActivityParser, OurLayoutsAreTheCuda13Layouts) {
  // The buffers of these tests are padded to the probe's CUDA 13 record sizes; they must be the
  // real CUPTI structs' sizes (cupti_layout_check.cpp proves every offset statically).
  EXPECT_EQ(sizeof(CUpti_ActivityKernel10), kKernelRecordSize13);
  EXPECT_EQ(sizeof(CUpti_ActivityExternalCorrelation), kExternalCorrelationRecordSize13);
}
#endif

}  // namespace
}  // namespace sp::cupti
