// One op, one source: a rank may time the same op several ways (a forward CPU-timed by the
// runtime region, by CUDA events and as a CUPTI span of its kernels; a collective from the c10d
// hooks and from the NCCL profiler plugin or interposer). Before the step model is built, each
// op kind keeps only the best source present, so nothing is counted twice:
//   compute (forward, backward, optimizer, other regions)  CUPTI > CUDA events > CPU
//   communication (collective, send, recv)                 NCCL > CUDA events > CPU
//   GC pauses, data waits, kernels, memcpys                 kept as they are (CPU / ignored)
// Compute is chosen per rank: a lesser-source op is superseded when the chosen source has the
// same op (micro-batch, name); one the chosen source lacks is kept, and counted, rather than
// lost. Communication sources do not share identities (group hashes and sequence numbers differ),
// so the source is chosen per kind for the whole step: the best one every rank that communicates
// has, so that collectives still match across ranks. Superseded ops are counted, never silent.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::online {

struct SourceSelection {
  // keep[r][i]: whether op i of rank r's summary goes into the model.
  std::vector<std::vector<bool>> keep;
  uint64_t superseded = 0;  // ops left out because a better source timed the same op
  uint64_t kept_alone = 0;  // lesser-source compute ops kept: the chosen source lacked them
  // "forward: cpu < cupti" -> count, for the report.
  std::map<std::string, uint64_t> superseded_by;
};

// Source names as reported: cpu, cuda-event, cupti, nccl (or "source-<n>").
std::string time_source_name(uint32_t source);

// by_rank[r] non-null for every rank (the model checks that first).
SourceSelection select_sources(const std::vector<const runtime::StepSummary*>& by_rank);

}  // namespace sp::online
