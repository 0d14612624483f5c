// straggler_probe._c10d: hands the job's c10d::Store to the transport as an sp_kv_store, so
// that summaries travel over the job's own torch.distributed store from a C++ thread, without
// the GIL; and stamps c10d Works' completion from C++ (work_stamp.h). Built against the installed
// torch (its headers, its bundled pybind11 and its C++ ABI) because the Store and Work objects
// cross from torch's Python bindings into this module.
#include <pybind11/pybind11.h>

#include "c10d_kv_store.h"
#include "group_observer.h"
#include "work_stamp.h"

// torch's bindings hold c10d objects by intrusive_ptr (torch/csrc/utils/pybind.h says the same).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true)

namespace py = pybind11;

namespace {

void destroy_capsule(PyObject* capsule) {
  auto* kv = static_cast<sp_kv_store*>(PyCapsule_GetPointer(capsule, SP_KV_STORE_CAPSULE));
  if (kv != nullptr) kv->vtable->destroy(kv->self);
  else PyErr_Clear();
}

py::object wrap_store(const py::object& store_obj) {
  auto store = py::cast<c10::intrusive_ptr<c10d::Store>>(store_obj);
  if (!store) throw py::value_error("straggler_probe._c10d.wrap_store: not a c10d Store");
  sp_kv_store* kv = sp::pyext::make_c10d_kv_store(std::move(store));
  PyObject* capsule = PyCapsule_New(kv, SP_KV_STORE_CAPSULE, destroy_capsule);
  if (capsule == nullptr) {
    kv->vtable->destroy(kv->self);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

}  // namespace

PYBIND11_MODULE(_c10d, m) {
  m.doc() = "straggler_probe's bridge to torch.distributed's c10d objects (built against torch): "
            "the job's Store for the transport, its Works' completion stamps, and its process groups' "
            "collectives observed from C++";
  m.def("wrap_store", &wrap_store, py::arg("store"),
        "A capsule owning a reference to the c10d Store, for straggler_probe._core's transport.");
  sp::pyext::bind_work_stamps(m);
  sp::pyext::bind_group_observer(m);
}
