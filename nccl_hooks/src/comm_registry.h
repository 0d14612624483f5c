// Communicators the interposer has seen, with the identity that lets rank 0 match one collective
// across ranks: group_id (same on every member of a communicator) and per-communicator sequence
// numbers (same on every member for the same operation, since all members issue the same
// operations in the same order).
//
//   collectives: seq = per-communicator counter over all collective calls
//   p2p:         seq = per (communicator, peer, direction) counter, so a rank's k-th send to P
//                matches P's k-th receive from that rank
//   one-sided:   the same per (communicator, peer, direction) counting in a space of its own
//                (ncclPutSignal / ncclSignal count one signal sent to the peer, ncclWaitSignal
//                the signals it waits for from it), so they never shift send/recv matching
//
// group_id is derived the way NCCL derives commHash (DJB2a over the ncclUniqueId bytes) for
// ranks that join with a unique id, and from the parent's id plus a per-parent split counter for
// ncclCommSplit/Shrink (collective over the parent, so the counter agrees on every member).
//
// Lookups on the hot path are lock-free (fixed open-addressing table of atomics); insertions and
// removals are rare and take a mutex. Entries are never freed (a reader may still hold one).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace sp::nccl {

struct CommInfo {
  const void* comm = nullptr;  // the ncclComm_t
  uint64_t group_id = 0;
  int32_t rank = -1;
  int32_t size = 0;
  bool identity_known = false;  // false: seen first on an operation, not at creation
  std::atomic<uint64_t> coll_seq{0};
  std::atomic<uint64_t> group_seq{0};
  std::atomic<uint32_t> children{0};  // splits/shrinks made from this communicator

  // The next sequence number of an operation on this communicator.
  uint64_t next_coll_seq() { return coll_seq.fetch_add(1, std::memory_order_relaxed); }
  uint64_t next_group_seq() { return group_seq.fetch_add(1, std::memory_order_relaxed); }
  enum class P2pSpace : uint8_t { kTwoSided, kSignals };
  // The sequence number of the next p2p operation toward (send) or from `peer`; advancing by
  // `count` (a wait for several signals), it is the number of the last of them.
  uint64_t next_p2p_seq(bool send, int32_t peer, P2pSpace space = P2pSpace::kTwoSided,
                        uint32_t count = 1);

  std::unique_ptr<std::atomic<uint32_t>[]> send_seq;  // [size], when size is known
  std::unique_ptr<std::atomic<uint32_t>[]> recv_seq;
  std::unique_ptr<std::atomic<uint32_t>[]> signal_send_seq;
  std::unique_ptr<std::atomic<uint32_t>[]> signal_recv_seq;
  std::mutex overflow_mutex;  // peers beyond `size` (size unknown at creation)
  std::unordered_map<int64_t, uint32_t> overflow_seq;
};

class CommRegistry {
 public:
  static constexpr size_t kSlots = 4096;

  CommRegistry();
  ~CommRegistry();
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  // Registers (or re-registers) a communicator; returns its entry, nullptr if the table is full.
  CommInfo* add(const void* comm, uint64_t group_id, int32_t rank, int32_t size, bool known);
  // The entry of `comm`, registering it (as add) only if it has none: for communicators first
  // seen on an operation, which several threads may see at once.
  CommInfo* find_or_add(const void* comm, uint64_t group_id, int32_t rank, int32_t size,
                        bool known);
  // Lock-free lookup; nullptr if unknown.
  CommInfo* find(const void* comm) const;
  void remove(const void* comm);
  size_t size() const;

  // NCCL's commHash construction over a ncclUniqueId (DJB2a, bytes as signed char).
  static uint64_t id_from_unique_id(const void* bytes, size_t n);
  // Identity of a child communicator: parent id, a tag (split colour / shrink), the parent's
  // child counter.
  static uint64_t child_id(uint64_t parent, uint64_t tag, uint64_t counter);

 private:
  size_t slot_of(const void* comm) const;
  void remove_locked(const void* comm);  // mutex_ held
  CommInfo* add_locked(const void* comm, uint64_t group_id, int32_t rank, int32_t size,
                       bool known);  // mutex_ held
  std::unique_ptr<std::atomic<CommInfo*>[]> slots_;
  mutable std::mutex mutex_;
  size_t live_ = 0;
};

// The process-wide registry.
CommRegistry& comm_registry();

}  // namespace sp::nccl
