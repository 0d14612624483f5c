#include "interposer/nccl_op.h"

#include "nccl_op_names.h"

namespace sp::nccl {
namespace {

uint64_t next_seq_for(const NcclOp& op, uint32_t signals) {
  if (op.comm == nullptr) return 0;
  const auto space = op.one_sided ? CommInfo::P2pSpace::kSignals : CommInfo::P2pSpace::kTwoSided;
  if (op.coll == SP_COLL_SEND) return op.comm->next_p2p_seq(true, op.peer, space, signals);
  if (op.coll == SP_COLL_RECV) return op.comm->next_p2p_seq(false, op.peer, space, signals);
  return op.comm->next_coll_seq();
}

// Mixed groups are numbered by their own per-communicator counter, so they must not share the
// communicator's collective identity: (group, seq) would then name an all-reduce and a group
// call at once, and the cross-rank matching would see one op twice. A fixed derivation keeps
// the id equal on every rank.
uint64_t derived_stream_id(uint64_t comm_group_id, uint64_t salt) {
  uint64_t x = comm_group_id ^ salt;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64 finaliser
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t group_call_stream_id(uint64_t id) { return derived_stream_id(id, 0x6e63636c47726f75ull); }  // "ncclGrou"
// One-sided operations: their own id, for the same reason (their own sequence space).
uint64_t signal_stream_id(uint64_t id) { return derived_stream_id(id, 0x6e63636c5369676eull); }  // "ncclSign"

void fill_comm(OpIdentity& id, CommInfo* comm) {
  id.comm = comm;
  if (comm != nullptr) {
    id.group_id = comm->group_id;
    id.group_size = comm->size;
  }
}

}  // namespace

OpIdentity identify_single(const NcclOp& op) {
  OpIdentity id;
  id.kind = op_kind_of(op.coll);
  id.coll = op.coll;
  fill_comm(id, op.comm);
  id.seq = next_seq_for(op, op.signals);
  if (op.one_sided && id.group_id != 0) id.group_id = signal_stream_id(id.group_id);
  id.bytes = op.bytes;
  id.peer = (op.coll == SP_COLL_SEND || op.coll == SP_COLL_RECV) ? op.peer : -1;
  id.stream = op.stream;
  id.op_count = 1;
  id.one_sided = op.one_sided;
  return id;
}

void GroupSummary::reset() { *this = GroupSummary(); }

void GroupSummary::add(const NcclOp& op) {
  if (count_ == 0) {
    first_ = op;
  } else {
    same_comm_ = same_comm_ && op.comm == first_.comm;
    same_coll_ = same_coll_ && op.coll == first_.coll;
    same_peer_ = same_peer_ && op.peer == first_.peer;
    same_sidedness_ = same_sidedness_ && op.one_sided == first_.one_sided;
  }
  bytes_ += op.bytes;
  signals_ += op.signals;
  ++count_;
}

OpIdentity GroupSummary::finish() {
  if (count_ <= 1) return identify_single(first_);
  OpIdentity id;
  fill_comm(id, first_.comm);
  id.bytes = bytes_;
  id.stream = first_.stream;
  id.op_count = count_;
  id.folded_group = true;
  const bool p2p = first_.coll == SP_COLL_SEND || first_.coll == SP_COLL_RECV;
  if (same_comm_ && same_coll_ && same_sidedness_) {
    id.kind = op_kind_of(first_.coll);
    id.coll = first_.coll;
    id.peer = p2p && same_peer_ ? first_.peer : -1;
    // Grouped puts or waits toward one peer count every signal of the group.
    id.seq = next_seq_for(first_, first_.one_sided && same_peer_ ? signals_ : 1);
    if (first_.one_sided && id.group_id != 0) id.group_id = signal_stream_id(id.group_id);
    id.one_sided = first_.one_sided;
    return id;
  }
  id.kind = SP_OP_COLLECTIVE;
  id.coll = SP_COLL_NONE;
  id.peer = same_peer_ && p2p ? first_.peer : -1;
  id.seq = first_.comm != nullptr ? first_.comm->next_group_seq() : 0;
  if (id.group_id != 0) id.group_id = group_call_stream_id(id.group_id);
  // Not every member of the communicator need take part in a mixed group (a pipeline exchange
  // involves two ranks): membership is "the ranks that made group calls on it in this step".
  id.group_size = 0;
  return id;
}

}  // namespace sp::nccl
