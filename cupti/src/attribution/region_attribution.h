// Attribution of GPU activities to the probe's regions (forward, backward, optimizer, micro-batch).
//
// A region pushes an external correlation id that encodes (kind, micro-batch, name, serial)
// (external_ids.h); every kernel launched inside comes back tagged with it. Per region instance
// we keep the GPU span (first start, last end) and the busy time, and emit the span once the
// instance has been quiet for a whole flush window. Per region type we keep the top kernels
// (count, total and max time) for the report. Memory is bounded: instance and kernel-name tables
// have caps, overflow is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "records/activity_parser.h"
#include "straggler_probe/gpu/external_ids.h"

namespace sp::cupti {

struct RegionSpan {
  gpu::RegionKey key;
  uint64_t external_id = 0;
  uint64_t gpu_start = 0;  // CUPTI time base
  uint64_t gpu_end = 0;
  uint64_t busy_ns = 0;    // sum of activity durations (overlaps counted twice)
  uint32_t activities = 0;
  uint64_t last_window = 0;
};

struct TopKernel {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
};

// The report's region type of kernels that CUDA graph replays launched outside every region:
// (kCudaGraphType, graph id), shown as "cuda-graph#<id>", so a replayed graph's kernels are
// attributed to their graph rather than lost among the outside-regions ones.
constexpr uint32_t kCudaGraphType = 0xffffu;

struct RegionAttributionOptions {
  size_t max_open_instances = 4096;
  size_t max_kernel_names = 4096;        // distinct kernel names remembered overall
  size_t max_kernels_per_region = 256;   // distinct kernels per region type
};

struct RegionAttributionStats {
  uint64_t tagged = 0;        // activities with a region id
  uint64_t untagged = 0;      // kernels/memcpys/memsets outside any region
  uint64_t graph_untagged = 0;  // of those, launched by a CUDA graph replay (by graph id)
  uint64_t nccl_tagged = 0;   // kernels launched inside an NCCL operation
  uint64_t instances_emitted = 0;
  uint64_t instances_evicted = 0;
  uint64_t names_overflowed = 0;
};

class RegionAttribution {
 public:
  explicit RegionAttribution(RegionAttributionOptions opts = {}) : opts_(opts) {}

  // Feeds one parsed activity of flush window `window` (kernels, memcpys, memsets; others are
  // ignored).
  void add(const GpuActivity& a, uint64_t window);

  // Moves out the instances that saw no activity in `window` (they are complete).
  void take_quiescent(uint64_t window, std::vector<RegionSpan>& out);
  // Moves out every open instance.
  void take_all(std::vector<RegionSpan>& out);

  // The k kernels with the largest total time in regions of (kind, name_id); kind 0 = untagged,
  // kind kCudaGraphType = untagged kernels of graph `name_id`.
  std::vector<TopKernel> top_kernels(uint32_t kind, uint32_t name_id, size_t k) const;
  // Region types that have kernel statistics, as (kind, name_id).
  std::vector<std::pair<uint32_t, uint32_t>> region_types() const;

  const RegionAttributionStats& stats() const { return stats_; }
  size_t open_instances() const { return open_.size(); }

 private:
  struct KernelStat {
    uint64_t count = 0;
    uint64_t total_ns = 0;
    uint64_t max_ns = 0;
  };
  uint32_t kernel_name_index(const char* name);
  void note_kernel(uint32_t kind, uint32_t name_id, const GpuActivity& a);

  RegionAttributionOptions opts_;
  RegionAttributionStats stats_;
  std::unordered_map<uint64_t, RegionSpan> open_;
  std::unordered_map<std::string, uint32_t> name_index_;
  std::vector<std::string> names_;
  // (kind << 32 | name_id) -> kernel name index -> stats
  std::map<uint64_t, std::unordered_map<uint32_t, KernelStat>> kernels_;
};

}  // namespace sp::cupti
