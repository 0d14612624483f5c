// The summaries bench/scale sends: the online tests' synthetic job (tests/online/synthetic_job.h)
// at a given shape, encoded as each rank's runtime would (step_summary.h), optionally with what a
// GPU rank's summary carries on top (CUPTI region spans, CUDA-event times, NCCL times, memcpys).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::bench {

struct ScaleJob {
  int dp = 8, pp = 8, microbatches = 8;
  double jitter = 0.02;
  int steps = 12;
  int straggler = -1;  // a rank whose compute is `slow` times slower (-1: none)
  double slow = 1.3;
  bool gpu = false;    // add the GPU records
};

// [step][rank] encoded summaries.
std::vector<std::vector<std::string>> make_summaries(const ScaleJob& job);

// What a GPU rank records besides the CPU times (cupti/README.md, nccl_hooks/README.md): every
// compute region again as a CUPTI span and a CUDA-event span (both pinned to the step that
// launched them), every collective and p2p operation again with NCCL times, and two memcpys per
// micro-batch.
void add_gpu_records(runtime::StepSummary* s);

// The size the version-1 codec wrote for the same summary (its layout is fixed: 16-byte header,
// 56 bytes of fields, 80 bytes per op, u32-length strings).
size_t v1_encoded_size(const runtime::StepSummary& s);

// The file the coordinator hands the rank processes: u32 steps, u32 world, then per step and
// rank a u32 length and the encoded summary. read_summaries keeps ranks [from, to) only.
void write_summaries(const std::string& path, const std::vector<std::vector<std::string>>& s);
std::vector<std::vector<std::string>> read_summaries(const std::string& path, int from, int to,
                                                     int* world);

}  // namespace sp::bench
