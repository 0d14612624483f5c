#include "python_kv_store.h"

#include <cstring>
#include <string>

namespace py = pybind11;

namespace sp::pyext {
namespace {

struct PythonKvStore {
  sp_kv_store base;
  py::object store;
};

void put_error(char* err, size_t cap, const std::string& what) {
  if (err == nullptr || cap == 0) return;
  std::strncpy(err, what.c_str(), cap - 1);
  err[cap - 1] = '\0';
}

// A thread may not take the GIL once the interpreter is finalising.
bool python_alive() { return Py_IsInitialized() != 0 && !_Py_IsFinalizing(); }

// Each call takes the GIL (unless Python is going away) and turns a Python error into the
// one-line error and -1.
template <class Body>
int with_python(char* err, size_t cap, Body&& body) {
  if (!python_alive()) return put_error(err, cap, "Python is shutting down"), -1;
  py::gil_scoped_acquire gil;
  try {
    return body();
  } catch (const std::exception& e) {
    put_error(err, cap, e.what());
  }
  return -1;
}

py::object& store_of(void* self) { return static_cast<PythonKvStore*>(self)->store; }

int kv_set(void* self, const char* key, const void* data, size_t size, char* err, size_t cap) {
  return with_python(err, cap, [&] {
    store_of(self).attr("set")(key, py::bytes(static_cast<const char*>(data), size));
    return 0;
  });
}

int kv_try_get(void* self, const char* key, sp_kv_sink sink, void* ctx, char* err, size_t cap) {
  return with_python(err, cap, [&] {
    py::object& store = store_of(self);
    py::list keys;
    keys.append(key);
    if (!store.attr("check")(keys).cast<bool>()) return 0;
    const std::string value = store.attr("get")(key).cast<std::string>();
    sink(ctx, value.data(), value.size());
    return 1;
  });
}

int kv_remove(void* self, const char* key, char* err, size_t cap) {
  return with_python(err, cap, [&] {
    store_of(self).attr("delete_key")(key);
    return 0;
  });
}

void kv_destroy(void* self) {
  auto* kv = static_cast<PythonKvStore*>(self);
  if (python_alive()) {
    py::gil_scoped_acquire gil;
    delete kv;
  }
  // else: leak the reference rather than touch a dead interpreter.
}

int kv_add(void* self, const char* key, int64_t delta, int64_t* result, char* err, size_t cap) {
  return with_python(err, cap, [&] {
    *result = store_of(self).attr("add")(key, delta).cast<int64_t>();
    return 0;
  });
}

int kv_compare_set(void* self, const char* key, const void* expected, size_t expected_size,
                   const void* desired, size_t desired_size, sp_kv_sink sink, void* ctx, char* err,
                   size_t cap) {
  return with_python(err, cap, [&] {
    const std::string now =
        store_of(self)
            .attr("compare_set")(key, py::bytes(static_cast<const char*>(expected), expected_size),
                                 py::bytes(static_cast<const char*>(desired), desired_size))
            .cast<std::string>();
    sink(ctx, now.data(), now.size());
    return 0;
  });
}

int kv_append(void* self, const char* key, const void* data, size_t size, char* err, size_t cap) {
  return with_python(err, cap, [&] {
    store_of(self).attr("append")(key, py::bytes(static_cast<const char*>(data), size));
    return 0;
  });
}

const sp_kv_store_vtable kVtable = {sizeof(sp_kv_store_vtable), kv_set,  kv_try_get,
                                    kv_remove,                  kv_destroy, kv_add,
                                    kv_compare_set,             kv_append};
// A Python store without append or compare_set (an older torch): the transport falls back to
// its per-rank protocol.
const sp_kv_store_vtable kBasicVtable = {sizeof(sp_kv_store_vtable), kv_set, kv_try_get,
                                         kv_remove, kv_destroy, kv_add, nullptr, nullptr};

}  // namespace

sp_kv_store* make_python_kv_store(py::object store) {
  const bool extended = py::hasattr(store, "append") && py::hasattr(store, "compare_set");
  auto* kv = new PythonKvStore{{extended ? &kVtable : &kBasicVtable, nullptr}, std::move(store)};
  kv->base.self = kv;
  return &kv->base;
}

}  // namespace sp::pyext
