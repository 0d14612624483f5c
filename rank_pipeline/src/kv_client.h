// C++ face of an sp_kv_store for the transport threads: owns the store, turns the C vtable's
// status codes into values and one-line errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kv_store.h"

namespace sp::rank_pipeline {

// A decimal integer as the transport and clock sync store them; nullopt unless the whole value
// is one integer.
std::optional<int64_t> parse_store_int(const std::string& text);

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

 private:
  sp_kv_store* store_;
};

}  // namespace sp::rank_pipeline
