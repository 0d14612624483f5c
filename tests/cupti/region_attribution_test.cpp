// Kernels attributed to regions: one span per region instance, top kernels per region type.
#include <gtest/gtest.h>

#include "attribution/region_attribution.h"
#include "straggler_probe/probe.h"

namespace sp::cupti {
namespace {

GpuActivity kernel(uint64_t start, uint64_t end, uint64_t ext, const char* name) {
  GpuActivity a;
  a.type = GpuActivity::Type::kKernel;
  a.start = start;
  a.end = end;
  a.external_id = ext;
  a.name = name;
  return a;
}

TEST(RegionAttribution, OneSpanPerInstanceEmittedWhenQuiet) {
  RegionAttribution r;
  const uint64_t f0 = gpu::encode_region_id({SP_OP_FORWARD, 0, 1}, 1);
  const uint64_t f1 = gpu::encode_region_id({SP_OP_FORWARD, 1, 1}, 2);
  r.add(kernel(100, 200, f0, "gemm"), 1);
  r.add(kernel(250, 300, f0, "relu"), 1);
  r.add(kernel(400, 500, f1, "gemm"), 1);
  r.add(kernel(510, 520, f1, "gemm"), 2);  // f1 still running in window 2

  std::vector<RegionSpan> out;
  r.take_quiescent(2, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key.microbatch, 0);
  EXPECT_EQ(out[0].gpu_start, 100u);
  EXPECT_EQ(out[0].gpu_end, 300u);
  EXPECT_EQ(out[0].busy_ns, 150u);
  EXPECT_EQ(out[0].activities, 2u);

  out.clear();
  r.take_quiescent(3, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key.microbatch, 1);
  EXPECT_EQ(out[0].gpu_end, 520u);
  EXPECT_EQ(r.open_instances(), 0u);
}

TEST(RegionAttribution, TopKernelsPerRegionType) {
  RegionAttribution r;
  const uint64_t b = gpu::encode_region_id({SP_OP_BACKWARD, 0, 2}, 1);
  for (int i = 0; i < 3; ++i) r.add(kernel(0, 100, b, "wgrad_gemm"), 1);
  r.add(kernel(0, 250, b, "dgrad_gemm"), 1);
  r.add(kernel(0, 10, b, "elementwise"), 1);
  r.add(kernel(0, 999, 0, "untagged_kernel"), 1);
  auto top = r.top_kernels(SP_OP_BACKWARD, 2, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].name, "wgrad_gemm");
  EXPECT_EQ(top[0].count, 3u);
  EXPECT_EQ(top[0].total_ns, 300u);
  EXPECT_EQ(top[1].name, "dgrad_gemm");
  EXPECT_EQ(top[1].max_ns, 250u);
  auto outside = r.top_kernels(0, 0, 5);
  ASSERT_EQ(outside.size(), 1u);
  EXPECT_EQ(outside[0].name, "untagged_kernel");
  EXPECT_EQ(r.stats().tagged, 5u);
  EXPECT_EQ(r.stats().untagged, 1u);
}

// Issue 11: kernels of CUDA graph replays outside every region are attributed to their graph
// (type kCudaGraphType, name id = graph id); a replay inside a region is the region's.
TEST(RegionAttribution, GraphKernelsOutsideRegionsAreAttributedToTheirGraph) {
  RegionAttribution r;
  GpuActivity g1 = kernel(100, 200, 0, "graph_gemm");
  g1.graph_id = 4;
  GpuActivity g2 = kernel(200, 260, 0, "graph_gemm");
  g2.graph_id = 4;
  GpuActivity inside = kernel(300, 400, gpu::encode_region_id({SP_OP_FORWARD, 0, 1}, 1), "gemm");
  inside.graph_id = 4;
  r.add(g1, 1);
  r.add(g2, 1);
  r.add(inside, 1);
  r.add(kernel(500, 510, 0, "eager"), 1);
  EXPECT_EQ(r.stats().graph_untagged, 2u);
  EXPECT_EQ(r.stats().tagged, 1u);
  const auto graph = r.top_kernels(kCudaGraphType, 4, 5);
  ASSERT_EQ(graph.size(), 1u);
  EXPECT_EQ(graph.front().count, 2u);
  EXPECT_EQ(graph.front().total_ns, 160u);
  ASSERT_EQ(r.top_kernels(0, 0, 5).size(), 1u) << "eager kernels stay outside-regions";
  EXPECT_EQ(r.top_kernels(SP_OP_FORWARD, 1, 5).size(), 1u);
}

TEST(RegionAttribution, CountsNcclKernelsAndBoundsNames) {
  RegionAttributionOptions o;
  o.max_kernels_per_region = 2;
  RegionAttribution r(o);
  r.add(kernel(0, 10, gpu::encode_nccl_op_id(4), "ncclDevKernel_AllReduce_Sum_f32_RING_LL"), 1);
  EXPECT_EQ(r.stats().nccl_tagged, 1u);
  const uint64_t f = gpu::encode_region_id({SP_OP_FORWARD, -1, 1}, 1);
  r.add(kernel(0, 10, f, "a"), 1);
  r.add(kernel(0, 10, f, "b"), 1);
  r.add(kernel(0, 10, f, "c"), 1);
  EXPECT_EQ(r.stats().names_overflowed, 1u);
  auto top = r.top_kernels(SP_OP_FORWARD, 1, 10);
  EXPECT_EQ(top.size(), 3u) << "a, b and the <other kernels> bucket";
}

}  // namespace
}  // namespace sp::cupti
