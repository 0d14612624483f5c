#include "source_selection.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "op_classes.h"
#include "straggler_probe/op_kinds.h"

namespace sp::online {
namespace {

enum class SourceClass : uint8_t { kCompute, kComm };

bool is_comm(uint32_t kind) { return op_role(kind) == OpRole::kComm; }

// Preference of a source for a class of ops; 0 for a source that does not time that class
// (such ops are kept unless a known source timed the same op).
int preference(SourceClass c, uint32_t source) {
  if (c == SourceClass::kCompute) {
    switch (source) {
      case SP_TIME_CUPTI: return 3;
      case SP_TIME_CUDA_EVENT: return 2;
      case SP_TIME_CPU: return 1;
      default: return 0;
    }
  }
  switch (source) {
    case SP_TIME_NCCL: return 3;
    case SP_TIME_CUDA_EVENT: return 2;
    case SP_TIME_CPU: return 1;
    default: return 0;
  }
}


void supersede(SourceSelection* out, int rank, size_t i, const sp_event& ev, uint32_t by) {
  out->keep[rank][i] = false;
  ++out->superseded;
  ++out->superseded_by[std::string(op_kind_name(ev.kind, "op")) + ": " + time_source_name(ev.time_source) +
                       " < " + time_source_name(by)];
}

// Compute regions of one rank: per kind, the best source present; a lesser-source op is
// superseded when that source has the same (micro-batch, name).
void select_compute(const runtime::StepSummary& s, int rank, SourceSelection* out) {
  for (uint32_t kind : {SP_OP_FORWARD, SP_OP_BACKWARD, SP_OP_OPTIMIZER, SP_OP_OTHER}) {
    int best = 0;
    uint32_t best_source = 0;
    bool seen = false, several = false;  // ops of this kind; from more than one source
    uint32_t first_source = 0;
    for (const sp_event& ev : s.ops) {
      if (ev.kind != kind) continue;
      if (!seen) first_source = ev.time_source;
      seen = true;
      several = several || ev.time_source != first_source;
      const int p = preference(SourceClass::kCompute, ev.time_source);
      if (p > best) {
        best = p;
        best_source = ev.time_source;
      }
    }
    // One source only: every op is of the best source, nothing to choose (and no set to build).
    if (best == 0 || !several) continue;
    std::set<std::pair<int32_t, uint32_t>> covered;
    for (const sp_event& ev : s.ops) {
      if (ev.kind == kind && ev.time_source == best_source) covered.emplace(ev.microbatch, ev.name_id);
    }
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const sp_event& ev = s.ops[i];
      if (ev.kind != kind || ev.time_source == best_source) continue;
      if (covered.count({ev.microbatch, ev.name_id}) != 0) {
        supersede(out, rank, i, ev, best_source);
      } else {
        ++out->kept_alone;
      }
    }
  }
}

// Communication of the whole step: the best source that every communicating rank has.
void select_comm(const std::vector<const runtime::StepSummary*>& by_rank, SourceSelection* out) {
  // Sorted, distinct sources (a rank has one to three): vectors, reused from rank to rank.
  std::vector<uint32_t> common, mine, both;
  bool any = false;
  for (const runtime::StepSummary* s : by_rank) {
    mine.clear();
    for (const sp_event& ev : s->ops) {
      if (is_comm(ev.kind) && std::find(mine.begin(), mine.end(), ev.time_source) == mine.end()) {
        mine.push_back(ev.time_source);
      }
    }
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end());
    if (!any) {
      common = mine;
      any = true;
    } else {
      both.clear();
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                            std::back_inserter(both));
      std::swap(common, both);
    }
  }
  int best = 0;
  uint32_t chosen = 0;
  for (uint32_t source : common) {
    const int p = preference(SourceClass::kComm, source);
    if (p > best) {
      best = p;
      chosen = source;
    }
  }
  if (best == 0) return;  // no source all ranks share: keep everything, the model judges
  for (size_t r = 0; r < by_rank.size(); ++r) {
    const runtime::StepSummary& s = *by_rank[r];
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const sp_event& ev = s.ops[i];
      if (is_comm(ev.kind) && ev.time_source != chosen) {
        supersede(out, static_cast<int>(r), i, ev, chosen);
      }
    }
  }
}

}  // namespace

std::string time_source_name(uint32_t source) {
  switch (source) {
    case SP_TIME_CPU: return "cpu";
    case SP_TIME_CUDA_EVENT: return "cuda-event";
    case SP_TIME_CUPTI: return "cupti";
    case SP_TIME_NCCL: return "nccl";
    default: return "source-" + std::to_string(source);
  }
}

SourceSelection select_sources(const std::vector<const runtime::StepSummary*>& by_rank) {
  SourceSelection out;
  out.keep.resize(by_rank.size());
  for (size_t r = 0; r < by_rank.size(); ++r) {
    out.keep[r].assign(by_rank[r]->ops.size(), true);
    select_compute(*by_rank[r], static_cast<int>(r), &out);
  }
  select_comm(by_rank, &out);
  return out;
}

}  // namespace sp::online
