// C++ face of an sp_kv_store for the transport threads: owns the store, turns the C vtable's
// status codes into values and one-line errors, and counts the operations and bytes it sends
// (what this process costs the job's store; bench/scale and stats() report them).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "straggler_probe/rank_pipeline/kv_store.h"

namespace sp::rank_pipeline {

// A decimal integer as the transport and clock sync store them; nullopt unless the whole value
// is one integer.
std::optional<int64_t> parse_store_int(const std::string& text);

enum class KvOp : int { kSet, kGet, kRemove, kAdd, kCompareSet, kAppend, kCount };
const char* kv_op_name(KvOp op);

struct KvCounters {
  std::atomic<uint64_t> by_op[static_cast<int>(KvOp::kCount)] = {};  // calls, each a round trip
  std::atomic<uint64_t> bytes_out{0};  // keys and values sent
  std::atomic<uint64_t> bytes_in{0};   // values received
  uint64_t ops() const {
    uint64_t n = 0;
    for (const auto& c : by_op) n += c.load(std::memory_order_relaxed);
    return n;
  }
  uint64_t ops(KvOp op) const { return by_op[static_cast<int>(op)].load(std::memory_order_relaxed); }
};

class KvClient {
 public:
  explicit KvClient(sp_kv_store* store) : store_(store) {}
  ~KvClient();
  KvClient(const KvClient&) = delete;
  KvClient& operator=(const KvClient&) = delete;

  bool set(const std::string& key, std::string_view value, std::string* error);
  // nullopt with error empty: absent; nullopt with error set: the store failed.
  std::optional<std::string> try_get(const std::string& key, std::string* error);
  bool remove(const std::string& key, std::string* error);
  // The store's atomic counter (c10d Store::add); nullopt with error set when it failed or the
  // store has no counter.
  std::optional<int64_t> add(const std::string& key, int64_t delta, std::string* error);
  // c10d compareSet: the key's value afterwards (== desired when it was set); nullopt with error
  // set when it failed or the store lacks it.
  std::optional<std::string> compare_set(const std::string& key, std::string_view expected,
                                         std::string_view desired, std::string* error);
  bool append(const std::string& key, std::string_view value, std::string* error);

  // What the store behind this client can do beyond set/get/remove.
  bool has_add() const;
  bool has_compare_set() const;
  bool has_append() const;

  const KvCounters& counters() const { return counters_; }

  // The store's health, shared by every thread using this client (transport, clock sync). A
  // call that fails pauses the next ones for kFirstPause, then twice that after each further
  // failure in a row: they fail at once, without reaching the store (whose client may log each
  // failure at length: torch's TCPStore does). kLostAfter failures in a row and the store is
  // lost for good: every call fails at once, and on_lost runs once, with the first error. A
  // store that answers again in between resets it all.
  static constexpr int kLostAfter = 3;
  static constexpr std::chrono::milliseconds kFirstPause{250};
  bool lost() const { return lost_.load(); }
  // Set before any thread uses the client.
  void set_on_lost(std::function<void(const std::string&)> on_lost) { on_lost_ = std::move(on_lost); }

 private:
  void count(KvOp op, const std::string& key, size_t out, size_t in = 0);
  // false (with *error) when the call must not reach the store now.
  bool admit(std::string* error);
  // After a call that reached the store.
  void note(bool ok, const std::string& error);

  sp_kv_store* store_;
  KvCounters counters_;
  std::atomic<int> failures_in_a_row_{0};
  std::atomic<int64_t> paused_until_ns_{0};
  std::atomic<bool> lost_{false};
  std::mutex error_mutex_;
  std::string first_error_;
  std::function<void(const std::string&)> on_lost_;
};

}  // namespace sp::rank_pipeline
