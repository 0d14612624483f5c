#include "local_kv_store.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace sp::rank_pipeline {

struct LocalKvData {
  mutable std::mutex mutex;
  std::map<std::string, std::string> values;
};

namespace {

struct LocalKvStore {
  sp_kv_store base;
  std::shared_ptr<LocalKvData> data;
};

LocalKvData* self_of(void* self) { return static_cast<LocalKvStore*>(self)->data.get(); }

int kv_set(void* self, const char* key, const void* data, size_t size, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  s->values[key].assign(static_cast<const char*>(data), size);
  return 0;
}

int kv_try_get(void* self, const char* key, sp_kv_sink sink, void* ctx, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  auto it = s->values.find(key);
  if (it == s->values.end()) return 0;
  sink(ctx, it->second.data(), it->second.size());
  return 1;
}

int kv_remove(void* self, const char* key, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  s->values.erase(key);
  return 0;
}

void kv_destroy(void* self) { delete static_cast<LocalKvStore*>(self); }

int kv_add(void* self, const char* key, int64_t delta, int64_t* result, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  std::string& value = s->values[key];
  *result = (value.empty() ? 0 : std::strtoll(value.c_str(), nullptr, 10)) + delta;
  value = std::to_string(*result);
  return 0;
}

// c10d's semantics: an absent key is set only when the expected value is empty; the caller
// learns the value the key holds afterwards (the expected one when an absent key stays absent).
int kv_compare_set(void* self, const char* key, const void* expected, size_t expected_size,
                   const void* desired, size_t desired_size, sp_kv_sink sink, void* ctx, char*,
                   size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  const std::string want(static_cast<const char*>(expected), expected_size);
  auto it = s->values.find(key);
  if (it == s->values.end()) {
    if (!want.empty()) return sink(ctx, want.data(), want.size()), 0;
    it = s->values.emplace(key, std::string()).first;
  } else if (it->second != want) {
    return sink(ctx, it->second.data(), it->second.size()), 0;
  }
  it->second.assign(static_cast<const char*>(desired), desired_size);
  sink(ctx, it->second.data(), it->second.size());
  return 0;
}

int kv_append(void* self, const char* key, const void* data, size_t size, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  s->values[key].append(static_cast<const char*>(data), size);
  return 0;
}

const sp_kv_store_vtable kFullVtable = {sizeof(sp_kv_store_vtable), kv_set, kv_try_get,
                                        kv_remove, kv_destroy, kv_add, kv_compare_set, kv_append};
const sp_kv_store_vtable kBasicVtable = {sizeof(sp_kv_store_vtable), kv_set, kv_try_get,
                                         kv_remove, kv_destroy, kv_add, nullptr, nullptr};

}  // namespace

std::shared_ptr<LocalKvData> make_local_kv_data() { return std::make_shared<LocalKvData>(); }

size_t local_kv_size(const LocalKvData& data) {
  std::lock_guard<std::mutex> lock(data.mutex);
  return data.values.size();
}

sp_kv_store* make_local_kv_store(LocalKvApi api, std::shared_ptr<LocalKvData> data) {
  auto* kv = new LocalKvStore();
  kv->data = data ? std::move(data) : make_local_kv_data();
  kv->base = {api == LocalKvApi::kFull ? &kFullVtable : &kBasicVtable, kv};
  return &kv->base;
}

}  // namespace sp::rank_pipeline
