// One NCCL operation as the interposer sees it, and the folding of a ncclGroupStart/End group
// into ONE operation (NCCL fuses a group into one launch, so that is also what the GPU runs).
//
// Rules for a group of several operations (pure, tested):
//   - all collectives of one type on one communicator (coalesced): that collective, bytes
//     summed, one collective sequence number;
//   - all sends (or all receives) on one communicator: SEND (RECV), peer kept if it is the only
//     one, else -1, one p2p sequence number toward the first peer;
//   - anything else (sends with receives, mixed types, several communicators): a COLLECTIVE of
//     type NONE named "ncclGroup", bytes summed, one per-communicator group sequence number,
//     under a group id derived from the communicator's (so it never collides with its
//     collectives) and with no fixed membership (group_size 0).
#pragma once

#include <cstdint>

#include "comm_registry.h"
#include "straggler_probe/probe.h"

namespace sp::nccl {

struct NcclOp {
  sp_coll_type coll = SP_COLL_NONE;
  CommInfo* comm = nullptr;
  uint64_t bytes = 0;
  int32_t peer = -1;  // p2p peer, communicator rank
  int32_t root = -1;
  void* stream = nullptr;
  // One-sided (NCCL 2.29: ncclPutSignal / ncclSignal as SEND, ncclWaitSignal as RECV): numbered
  // in the communicator's signal space under an id of their own; a wait counts `signals`.
  bool one_sided = false;
  uint32_t signals = 1;
};

// What a finished operation (single or folded group) is, before timing.
struct OpIdentity {
  sp_op_kind kind = SP_OP_COLLECTIVE;
  sp_coll_type coll = SP_COLL_NONE;
  CommInfo* comm = nullptr;
  uint64_t group_id = 0;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int32_t peer = -1;
  int32_t group_size = 0;
  void* stream = nullptr;
  uint32_t op_count = 0;
  bool folded_group = false;
  bool one_sided = false;
};

// Accumulates the operations of one group without storing them.
class GroupSummary {
 public:
  void reset();
  void add(const NcclOp& op);
  uint32_t count() const { return count_; }
  void* first_stream() const { return first_.stream; }
  // Assigns the sequence number (advancing the communicator's counters) and returns the one
  // operation the group stands for. Call once per group.
  OpIdentity finish();

 private:
  uint32_t count_ = 0;
  NcclOp first_;
  bool same_comm_ = true;
  bool same_coll_ = true;
  bool same_peer_ = true;
  bool same_sidedness_ = true;
  uint64_t bytes_ = 0;
  uint32_t signals_ = 0;
};

// Identity of a single, ungrouped operation (advances the communicator's counters).
OpIdentity identify_single(const NcclOp& op);

}  // namespace sp::nccl
