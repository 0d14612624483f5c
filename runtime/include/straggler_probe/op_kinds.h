// The one table of what each sp_op_kind (probe.h) is called and what it is, for every C++ layer
// that names or sorts kinds: the GPU report (cupti/), the online model's source selection and op
// classes (online/); and the names of the collectives (sp_coll_kind), for the op types of the
// analysis and the hang line. C++ only; the wire values stay probe.h's.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>

#include "straggler_probe/probe.h"

namespace sp {

// How the online model treats a kind: CPU-timed compute and waits (one op per micro-batch or
// step), communication, or finer than the step model (single kernels and copies: counted, left
// out of the compute chain).
enum class OpKindClass : uint8_t { kCompute, kComm, kFineGrained };

struct OpKindInfo {
  sp_op_kind kind;
  std::string_view name;       // short label: "forward", "send", "region", ...
  std::string_view type_name;  // the paper's op type, for compute kinds: "forward-compute", ...
  OpKindClass op_class;
};

inline constexpr OpKindInfo kOpKinds[] = {
    {SP_OP_FORWARD, "forward", "forward-compute", OpKindClass::kCompute},
    {SP_OP_BACKWARD, "backward", "backward-compute", OpKindClass::kCompute},
    {SP_OP_OPTIMIZER, "optimizer", "optimizer", OpKindClass::kCompute},
    {SP_OP_COLLECTIVE, "collective", "collective", OpKindClass::kComm},
    {SP_OP_SEND, "send", "send", OpKindClass::kComm},
    {SP_OP_RECV, "recv", "recv", OpKindClass::kComm},
    {SP_OP_GC, "gc", "gc", OpKindClass::kCompute},
    {SP_OP_DATA_WAIT, "data-wait", "data-wait", OpKindClass::kCompute},
    {SP_OP_KERNEL, "kernel", "kernel", OpKindClass::kFineGrained},
    {SP_OP_MEMCPY, "memcpy", "memcpy", OpKindClass::kFineGrained},
    {SP_OP_OTHER, "region", "other", OpKindClass::kCompute},
};
static_assert(std::size(kOpKinds) == SP_OP_KIND_MAX - 1, "one row per sp_op_kind");

// The row of `kind`, nullptr for a value that is no sp_op_kind (bytes from another build).
constexpr const OpKindInfo* op_kind_info(uint32_t kind) {
  for (const OpKindInfo& k : kOpKinds) {
    if (static_cast<uint32_t>(k.kind) == kind) return &k;
  }
  return nullptr;
}

constexpr std::string_view op_kind_name(uint32_t kind, std::string_view unknown) {
  const OpKindInfo* k = op_kind_info(kind);
  return k != nullptr ? k->name : unknown;
}

// The name of a collective (sp_coll_kind): its op type in the analysis and the hang line's
// "waiting in all-reduce"; "collective" for a value that is none (bytes from another build).
constexpr std::string_view collective_name(uint32_t coll) {
  switch (coll) {
    case SP_COLL_ALL_REDUCE: return "all-reduce";
    case SP_COLL_ALL_GATHER: return "all-gather";
    case SP_COLL_REDUCE_SCATTER: return "reduce-scatter";
    case SP_COLL_BROADCAST: return "broadcast";
    case SP_COLL_REDUCE: return "reduce";
    case SP_COLL_ALL_TO_ALL: return "all-to-all";
    case SP_COLL_BARRIER: return "barrier";
    case SP_COLL_GATHER: return "gather";
    case SP_COLL_SCATTER: return "scatter";
    default: return "collective";
  }
}

}  // namespace sp
