#include "comm_registry.h"

namespace sp::nccl {
namespace {

// A removed slot: probing continues past it.
CommInfo* const kTombstone = reinterpret_cast<CommInfo*>(uintptr_t{1});

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t CommInfo::next_p2p_seq(bool send, int32_t peer, P2pSpace space, uint32_t count) {
  if (count == 0) count = 1;
  const bool signals = space == P2pSpace::kSignals;
  auto& table = signals ? (send ? signal_send_seq : signal_recv_seq) : (send ? send_seq : recv_seq);
  if (peer >= 0 && peer < size && table) {
    return table[static_cast<size_t>(peer)].fetch_add(count, std::memory_order_relaxed) + count - 1;
  }
  // Peers beyond the known size: rare (size unknown at creation), so a lock is affordable.
  const int64_t key = (static_cast<int64_t>(peer) << 2) | (send ? 1 : 0) | (signals ? 2 : 0);
  std::lock_guard<std::mutex> lock(overflow_mutex);
  uint32_t& next = overflow_seq[key];
  next += count;
  return next - 1;
}

CommRegistry::CommRegistry() : slots_(new std::atomic<CommInfo*>[kSlots]) {
  for (size_t i = 0; i < kSlots; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

CommRegistry::~CommRegistry() = default;  // entries are leaked on purpose (see header)

size_t CommRegistry::slot_of(const void* comm) const {
  return static_cast<size_t>(mix(reinterpret_cast<uintptr_t>(comm)) % kSlots);
}

CommInfo* CommRegistry::find(const void* comm) const {
  if (comm == nullptr) return nullptr;
  size_t s = slot_of(comm);
  for (size_t probe = 0; probe < kSlots; ++probe, s = (s + 1) % kSlots) {
    CommInfo* c = slots_[s].load(std::memory_order_acquire);
    if (c == nullptr) return nullptr;
    if (c != kTombstone && c->comm == comm) return c;
  }
  return nullptr;
}

CommInfo* CommRegistry::add(const void* comm, uint64_t group_id, int32_t rank, int32_t size,
                            bool known) {
  if (comm == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  // NCCL may hand out the address of a destroyed communicator again: replace the old entry.
  remove_locked(comm);
  return add_locked(comm, group_id, rank, size, known);
}

CommInfo* CommRegistry::find_or_add(const void* comm, uint64_t group_id, int32_t rank,
                                    int32_t size, bool known) {
  if (comm == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (CommInfo* c = find(comm)) return c;
  return add_locked(comm, group_id, rank, size, known);
}

CommInfo* CommRegistry::add_locked(const void* comm, uint64_t group_id, int32_t rank,
                                   int32_t size, bool known) {
  if (live_ + 1 >= kSlots) return nullptr;
  auto* info = new CommInfo();
  info->comm = comm;
  info->group_id = group_id;
  info->rank = rank;
  info->size = size;
  info->identity_known = known;
  if (size > 0) {
    for (auto* table : {&info->send_seq, &info->recv_seq, &info->signal_send_seq,
                        &info->signal_recv_seq}) {
      table->reset(new std::atomic<uint32_t>[static_cast<size_t>(size)]);
      for (int32_t i = 0; i < size; ++i) (*table)[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
    }
  }
  size_t s = slot_of(comm);
  for (size_t probe = 0; probe < kSlots; ++probe, s = (s + 1) % kSlots) {
    CommInfo* c = slots_[s].load(std::memory_order_acquire);
    if (c == nullptr || c == kTombstone) {
      slots_[s].store(info, std::memory_order_release);
      ++live_;
      return info;
    }
  }
  delete info;
  return nullptr;
}

void CommRegistry::remove(const void* comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  remove_locked(comm);
}

void CommRegistry::remove_locked(const void* comm) {
  size_t s = slot_of(comm);
  for (size_t probe = 0; probe < kSlots; ++probe, s = (s + 1) % kSlots) {
    CommInfo* c = slots_[s].load(std::memory_order_acquire);
    if (c == nullptr) return;
    if (c != kTombstone && c->comm == comm) {
      slots_[s].store(kTombstone, std::memory_order_release);
      --live_;
      return;
    }
  }
}

size_t CommRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

uint64_t CommRegistry::id_from_unique_id(const void* bytes, size_t n) {
  const auto* p = static_cast<const signed char*>(bytes);
  uint64_t h = 5381;
  for (size_t i = 0; i < n; ++i) {
    h = ((h << 5) + h) ^ static_cast<uint64_t>(static_cast<int64_t>(p[i]));
  }
  return h;
}

uint64_t CommRegistry::child_id(uint64_t parent, uint64_t tag, uint64_t counter) {
  return mix(parent ^ mix(tag ^ mix(counter + 0x5eed)));
}

CommRegistry& comm_registry() {
  static CommRegistry* r = new CommRegistry();  // leaked: used until the last NCCL call
  return *r;
}

}  // namespace sp::nccl
