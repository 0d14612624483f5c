// The key-value store the transport talks through: a C vtable, so that the store can come from a
// separately built extension (straggler_probe._c10d, compiled against torch's c10d::Store) or from
// a Python object, without sharing C++ types or standard-library ABI across shared objects.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef void (*sp_kv_sink)(void* ctx, const void* data, size_t size);

typedef struct sp_kv_store_vtable {
  uint32_t struct_size;
  // 0: stored. -1: failed, a one-line message in err.
  int (*set)(void* self, const char* key, const void* data, size_t size, char* err,
             size_t err_cap);
  // 1: found, sink called with the value. 0: absent (never waits for it). -1: failed.
  int (*try_get)(void* self, const char* key, sp_kv_sink sink, void* ctx, char* err,
                 size_t err_cap);
  // 0: removed or absent. -1: failed.
  int (*remove)(void* self, const char* key, char* err, size_t err_cap);
  void (*destroy)(void* self);
  // Appended later (present when struct_size covers them; each may also be NULL when the store
  // behind it lacks the operation, e.g. an older torch):
  // adds delta to the integer counter at key (created at 0) and stores the new value in *result.
  // 0: done. -1: failed.
  int (*add)(void* self, const char* key, int64_t delta, int64_t* result, char* err,
             size_t err_cap);
  // c10d's compareSet: stores `desired` when the key holds `expected` (or is absent and
  // `expected` is empty); the sink gets the value the key holds afterwards. 0: done. -1: failed.
  int (*compare_set)(void* self, const char* key, const void* expected, size_t expected_size,
                     const void* desired, size_t desired_size, sp_kv_sink sink, void* ctx,
                     char* err, size_t err_cap);
  // c10d's append: adds the bytes at the end of the key's value (created when absent).
  // 0: done. -1: failed.
  int (*append)(void* self, const char* key, const void* data, size_t size, char* err,
                size_t err_cap);
} sp_kv_store_vtable;

typedef struct sp_kv_store {
  const sp_kv_store_vtable* vtable;
  void* self;
} sp_kv_store;

}  // extern "C"

// Name of the PyCapsule that carries an sp_kv_store* between the extensions. Whoever takes the
// pointer out of the capsule owns it (and clears the capsule's destructor).
#define SP_KV_STORE_CAPSULE "straggler_probe.kv_store"
