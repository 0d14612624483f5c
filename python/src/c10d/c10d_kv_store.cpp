#include "c10d_kv_store.h"

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace sp::pyext {
namespace {

void put_error(char* err, size_t cap, const char* what) {
  if (err == nullptr || cap == 0) return;
  std::strncpy(err, what, cap - 1);
  err[cap - 1] = '\0';
}

// First member is the C struct, so the sp_kv_store* and the object are the same allocation.
struct C10dKvStore {
  sp_kv_store base;
  c10::intrusive_ptr<c10d::Store> store;
};

// No exception crosses the C vtable: it becomes the one-line error and -1.
template <class Body>
int guarded(const char* op, char* err, size_t cap, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    put_error(err, cap, e.what());
  } catch (...) {
    put_error(err, cap, (std::string("unknown exception from c10d::Store::") + op).c_str());
  }
  return -1;
}

c10d::Store& store_of(void* self) { return *static_cast<C10dKvStore*>(self)->store; }

int kv_set(void* self, const char* key, const void* data, size_t size, char* err, size_t cap) {
  return guarded("set", err, cap, [&] {
    const auto* bytes = static_cast<const uint8_t*>(data);
    store_of(self).set(key, std::vector<uint8_t>(bytes, bytes + size));
    return 0;
  });
}

int kv_try_get(void* self, const char* key, sp_kv_sink sink, void* ctx, char* err, size_t cap) {
  return guarded("get", err, cap, [&] {
    c10d::Store& store = store_of(self);
    // check() never waits; get() on a missing key would block for the store's timeout.
    if (!store.check({std::string(key)})) return 0;
    const std::vector<uint8_t> value = store.get(key);
    sink(ctx, value.data(), value.size());
    return 1;
  });
}

int kv_remove(void* self, const char* key, char* err, size_t cap) {
  return guarded("deleteKey", err, cap, [&] {
    store_of(self).deleteKey(key);
    return 0;
  });
}

void kv_destroy(void* self) { delete static_cast<C10dKvStore*>(self); }

int kv_add(void* self, const char* key, int64_t delta, int64_t* result, char* err, size_t cap) {
  return guarded("add", err, cap, [&] {
    *result = store_of(self).add(key, delta);
    return 0;
  });
}

std::vector<uint8_t> bytes_of(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(p, p + size);
}

int kv_compare_set(void* self, const char* key, const void* expected, size_t expected_size,
                   const void* desired, size_t desired_size, sp_kv_sink sink, void* ctx, char* err,
                   size_t cap) {
  return guarded("compareSet", err, cap, [&] {
    const std::vector<uint8_t> now = store_of(self).compareSet(
        key, bytes_of(expected, expected_size), bytes_of(desired, desired_size));
    sink(ctx, now.data(), now.size());
    return 0;
  });
}

// c10d::Store::append came with torch 2.1; a torch without it gets no entry, and the transport
// falls back to its per-rank protocol (rank_pipeline/README.md).
template <class S>
concept StoreHasAppend = requires(S& s, const std::string& k, const std::vector<uint8_t>& v) {
  s.append(k, v);
};

template <class S>
int kv_append_impl(void* self, const char* key, const void* data, size_t size, char* err,
                   size_t cap) {
  return guarded("append", err, cap, [&] {
    static_cast<S&>(store_of(self)).append(key, bytes_of(data, size));
    return 0;
  });
}

template <class S>
constexpr auto append_entry() {
  if constexpr (StoreHasAppend<S>) {
    return &kv_append_impl<S>;
  } else {
    return static_cast<int (*)(void*, const char*, const void*, size_t, char*, size_t)>(nullptr);
  }
}

const sp_kv_store_vtable kVtable = {sizeof(sp_kv_store_vtable), kv_set,  kv_try_get,
                                    kv_remove,                  kv_destroy, kv_add,
                                    kv_compare_set,             append_entry<c10d::Store>()};

}  // namespace

sp_kv_store* make_c10d_kv_store(c10::intrusive_ptr<c10d::Store> store) {
  auto* kv = new C10dKvStore{{&kVtable, nullptr}, std::move(store)};
  kv->base.self = kv;
  return &kv->base;
}

sp_kv_store* connect_tcp_kv_store(const char* host, int port, bool is_server, int timeout_ms,
                                  char* err, size_t err_cap) {
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(port);
    o.isServer = is_server;
    o.waitWorkers = false;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    return make_c10d_kv_store(c10::make_intrusive<c10d::TCPStore>(host, o));
  } catch (const std::exception& e) {
    put_error(err, err_cap, e.what());
  } catch (...) {
    put_error(err, err_cap, "unknown exception from c10d::TCPStore");
  }
  return nullptr;
}

}  // namespace sp::pyext
