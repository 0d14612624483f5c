#include "kv_client.h"

#include <algorithm>
#include <array>
#include <cstddef>

namespace sp::rank_pipeline {
namespace {

constexpr size_t kErrCap = 512;

void assign_sink(void* ctx, const void* data, size_t size) {
  static_cast<std::string*>(ctx)->assign(static_cast<const char*>(data), size);
}

// The vtable entry is there when the vtable is long enough to hold it and it is set.
template <class Fn>
bool has_entry(const sp_kv_store_vtable* v, size_t offset, Fn fn) {
  return v->struct_size >= offset + sizeof(fn) && fn != nullptr;
}

// The first line only: a store's exception may carry a backtrace (c10::Error's what() does),
// and a warning is one line.
std::string message(const std::array<char, kErrCap>& err, const char* fallback) {
  if (err[0] == '\0') return fallback;
  std::string m(err.data());
  return m.substr(0, m.find('\n'));
}

int64_t steady_ns() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
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

const char* kv_op_name(KvOp op) {
  switch (op) {
    case KvOp::kSet: return "set";
    case KvOp::kGet: return "get";
    case KvOp::kRemove: return "delete";
    case KvOp::kAdd: return "add";
    case KvOp::kCompareSet: return "compare_set";
    case KvOp::kAppend: return "append";
    case KvOp::kCount: break;
  }
  return "?";
}

bool KvClient::admit(std::string* error) {
  if (lost_.load()) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    *error = "the store is unreachable (" + first_error_ + ")";
    return false;
  }
  if (steady_ns() < paused_until_ns_.load()) {
    *error = "store calls paused after a failure";
    return false;
  }
  return true;
}

void KvClient::note(bool ok, const std::string& error) {
  if (ok) {
    failures_in_a_row_.store(0);
    return;
  }
  const int n = failures_in_a_row_.fetch_add(1) + 1;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (n == 1) first_error_ = error;
  }
  const auto pause = kFirstPause * (1 << std::min(n - 1, 8));
  paused_until_ns_.store(steady_ns() + std::chrono::nanoseconds(pause).count());
  if (n >= kLostAfter && !lost_.exchange(true) && on_lost_) {
    std::string first;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      first = first_error_;
    }
    on_lost_(first);
  }
}

void KvClient::count(KvOp op, const std::string& key, size_t out, size_t in) {
  counters_.by_op[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed);
  counters_.bytes_out.fetch_add(key.size() + out, std::memory_order_relaxed);
  if (in != 0) counters_.bytes_in.fetch_add(in, std::memory_order_relaxed);
}

bool KvClient::has_add() const {
  return has_entry(store_->vtable, offsetof(sp_kv_store_vtable, add), store_->vtable->add);
}
bool KvClient::has_compare_set() const {
  return has_entry(store_->vtable, offsetof(sp_kv_store_vtable, compare_set),
                   store_->vtable->compare_set);
}
bool KvClient::has_append() const {
  return has_entry(store_->vtable, offsetof(sp_kv_store_vtable, append), store_->vtable->append);
}

bool KvClient::set(const std::string& key, std::string_view value, std::string* error) {
  if (!admit(error)) return false;
  std::array<char, kErrCap> err{};
  count(KvOp::kSet, key, value.size());
  if (store_->vtable->set(store_->self, key.c_str(), value.data(), value.size(), err.data(),
                          err.size()) == 0) {
    note(true, "");
    return true;
  }
  *error = message(err, "store set failed");
  note(false, *error);
  return false;
}

std::optional<std::string> KvClient::try_get(const std::string& key, std::string* error) {
  if (!admit(error)) return std::nullopt;
  std::array<char, kErrCap> err{};
  std::string value;
  const int rc = store_->vtable->try_get(store_->self, key.c_str(), assign_sink, &value,
                                         err.data(), err.size());
  count(KvOp::kGet, key, 0, value.size());
  error->clear();
  if (rc < 0) *error = message(err, "store read failed");
  note(rc >= 0, *error);
  if (rc == 1) return value;
  return std::nullopt;
}

bool KvClient::remove(const std::string& key, std::string* error) {
  if (!admit(error)) return false;
  std::array<char, kErrCap> err{};
  count(KvOp::kRemove, key, 0);
  if (store_->vtable->remove(store_->self, key.c_str(), err.data(), err.size()) == 0) {
    note(true, "");
    return true;
  }
  *error = message(err, "store remove failed");
  note(false, *error);
  return false;
}

std::optional<int64_t> KvClient::add(const std::string& key, int64_t delta, std::string* error) {
  if (!has_add()) {
    *error = "the store has no counter (add)";
    return std::nullopt;
  }
  if (!admit(error)) return std::nullopt;
  std::array<char, kErrCap> err{};
  int64_t result = 0;
  count(KvOp::kAdd, key, sizeof(delta));
  if (store_->vtable->add(store_->self, key.c_str(), delta, &result, err.data(), err.size()) == 0) {
    note(true, "");
    return result;
  }
  *error = message(err, "store add failed");
  note(false, *error);
  return std::nullopt;
}

std::optional<std::string> KvClient::compare_set(const std::string& key, std::string_view expected,
                                                 std::string_view desired, std::string* error) {
  if (!has_compare_set()) {
    *error = "the store has no compare_set";
    return std::nullopt;
  }
  if (!admit(error)) return std::nullopt;
  std::array<char, kErrCap> err{};
  std::string value;
  const int rc = store_->vtable->compare_set(store_->self, key.c_str(), expected.data(),
                                             expected.size(), desired.data(), desired.size(),
                                             assign_sink, &value, err.data(), err.size());
  count(KvOp::kCompareSet, key, expected.size() + desired.size(), value.size());
  if (rc == 0) {
    note(true, "");
    return value;
  }
  *error = message(err, "store compare_set failed");
  note(false, *error);
  return std::nullopt;
}

bool KvClient::append(const std::string& key, std::string_view value, std::string* error) {
  if (!has_append()) {
    *error = "the store has no append";
    return false;
  }
  if (!admit(error)) return false;
  std::array<char, kErrCap> err{};
  count(KvOp::kAppend, key, value.size());
  if (store_->vtable->append(store_->self, key.c_str(), value.data(), value.size(), err.data(),
                             err.size()) == 0) {
    note(true, "");
    return true;
  }
  *error = message(err, "store append failed");
  note(false, *error);
  return false;
}

}  // namespace sp::rank_pipeline
