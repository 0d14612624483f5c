// Names of the op types the online analysis reports (S_t) and the classes whose durations are
// comparable (the ideal-duration keys). Derived from the probe's sp_event records.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "straggler_probe/op_kinds.h"
#include "straggler_probe/probe.h"

namespace sp::online {

// How an op's ideal duration is estimated.
enum class IdealRule : uint8_t {
  kMean,      // compute: mean over the window and workers (re-balancing semantics)
  kSlotMean,  // gc, data-wait: mean per (rank, step) slot, absent slots counted as zero
  kMedian,    // communication: median of the transfer time (flaps would skew a mean)
};

enum class OpRole : uint8_t { kCompute, kComm, kIgnored, kInvalid };

namespace detail {
// The role of every sp_op_kind value, from op_kinds.h's table (kInvalid where it has no row).
// Inline and by index because the op model asks for it several times per op of every rank each
// step (a search of kOpKinds per call cost ~22 M instructions a step at 4096 ranks).
constexpr OpRole role_of_class(OpKindClass c) {
  switch (c) {
    case OpKindClass::kCompute: return OpRole::kCompute;
    case OpKindClass::kComm: return OpRole::kComm;
    // Single kernels and copies are finer than the step model (one op per micro-batch); they
    // are counted and left out rather than guessed into the compute chain.
    case OpKindClass::kFineGrained: return OpRole::kIgnored;
  }
  return OpRole::kInvalid;
}
struct RoleTable {
  OpRole role[SP_OP_KIND_MAX];
  constexpr RoleTable() : role{} {
    for (OpRole& r : role) r = OpRole::kInvalid;
    for (const OpKindInfo& k : kOpKinds) role[static_cast<uint32_t>(k.kind)] = role_of_class(k.op_class);
  }
};
inline constexpr RoleTable kRoleTable{};
}  // namespace detail

inline OpRole op_role(uint32_t kind) {
  return kind < SP_OP_KIND_MAX ? detail::kRoleTable.role[kind] : OpRole::kInvalid;
}
IdealRule ideal_rule(uint32_t kind);

// The reported op type: forward-compute, backward-compute, optimizer, gc, data-wait, other,
// all-reduce/all-gather/... for collectives, forward-send/backward-recv/... for pipeline p2p
// (send/recv when the stages are unknown). my_stage/peer_stage are -1 when unknown.
std::string op_type_name(const sp_event& ev, int my_stage, int peer_stage);

// The key under which durations are compared: the type, refined where ops of one type do
// different amounts of work: user regions by name, communication by payload size, pipeline
// transfers also by their place in the schedule (`ordinal` among the rank's ops of this type,
// on pipeline stage `stage`), and compute by `piece`: the op's index among the rank's ops of
// this type and micro-batch in the step (a forward the probe cut at the collectives it waited
// for, as FSDP's per-layer all-gathers, is several ops of very different sizes).
std::string ideal_key(const sp_event& ev, std::string_view type, std::string_view name,
                      int ordinal, int stage, int piece = 0);
// The same key written into *out (its capacity reused: no allocation per op in the model).
void ideal_key_into(std::string* out, const sp_event& ev, std::string_view type,
                    std::string_view name, int ordinal, int stage, int piece = 0);

inline constexpr std::string_view kLaunchDelayType = "launch-delay";

}  // namespace sp::online
