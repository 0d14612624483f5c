#include "local_kv_store.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace sp::rank_pipeline {
namespace {

struct LocalKvStore {
  sp_kv_store base;
  std::mutex mutex;
  std::map<std::string, std::string> values;
};

LocalKvStore* self_of(void* self) { return static_cast<LocalKvStore*>(self); }

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

void kv_destroy(void* self) { delete self_of(self); }

int kv_add(void* self, const char* key, int64_t delta, int64_t* result, char*, size_t) {
  auto* s = self_of(self);
  std::lock_guard<std::mutex> lock(s->mutex);
  std::string& value = s->values[key];
  *result = (value.empty() ? 0 : std::strtoll(value.c_str(), nullptr, 10)) + delta;
  value = std::to_string(*result);
  return 0;
}

const sp_kv_store_vtable kVtable = {sizeof(sp_kv_store_vtable), kv_set, kv_try_get, kv_remove,
                                    kv_destroy, kv_add};

}  // namespace

sp_kv_store* make_local_kv_store() {
  auto* kv = new LocalKvStore();
  kv->base = {&kVtable, kv};
  return &kv->base;
}

}  // namespace sp::rank_pipeline
