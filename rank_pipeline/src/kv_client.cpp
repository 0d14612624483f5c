#include "kv_client.h"

#include <array>
#include <cstddef>

namespace sp::rank_pipeline {
namespace {

constexpr size_t kErrCap = 512;

void append_sink(void* ctx, const void* data, size_t size) {
  static_cast<std::string*>(ctx)->assign(static_cast<const char*>(data), size);
}

}  // namespace

std::optional<int64_t> parse_store_int(const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used != text.size()) return std::nullopt;
    return static_cast<int64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

KvClient::~KvClient() {
  if (store_ != nullptr && store_->vtable->destroy != nullptr) store_->vtable->destroy(store_->self);
}

bool KvClient::set(const std::string& key, std::string_view value, std::string* error) {
  std::array<char, kErrCap> err{};
  if (store_->vtable->set(store_->self, key.c_str(), value.data(), value.size(), err.data(),
                          err.size()) == 0) {
    return true;
  }
  *error = err.data();
  return false;
}

std::optional<std::string> KvClient::try_get(const std::string& key, std::string* error) {
  std::array<char, kErrCap> err{};
  std::string value;
  const int rc = store_->vtable->try_get(store_->self, key.c_str(), append_sink, &value,
                                         err.data(), err.size());
  error->clear();
  if (rc == 1) return value;
  if (rc < 0) *error = err[0] != '\0' ? err.data() : "store read failed";
  return std::nullopt;
}

bool KvClient::remove(const std::string& key, std::string* error) {
  std::array<char, kErrCap> err{};
  if (store_->vtable->remove(store_->self, key.c_str(), err.data(), err.size()) == 0) return true;
  *error = err.data();
  return false;
}

std::optional<int64_t> KvClient::add(const std::string& key, int64_t delta, std::string* error) {
  const sp_kv_store_vtable* v = store_->vtable;
  if (v->struct_size < offsetof(sp_kv_store_vtable, add) + sizeof(v->add) || v->add == nullptr) {
    *error = "the store has no counter (add)";
    return std::nullopt;
  }
  std::array<char, kErrCap> err{};
  int64_t result = 0;
  if (v->add(store_->self, key.c_str(), delta, &result, err.data(), err.size()) == 0) return result;
  *error = err[0] != '\0' ? err.data() : "store add failed";
  return std::nullopt;
}

}  // namespace sp::rank_pipeline
