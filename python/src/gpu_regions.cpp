#include "gpu_regions.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime_api.h"

namespace py = pybind11;

namespace sp::pyext {
namespace {

struct GpuRegionApi {
  int (*start)() = nullptr;
  int (*push)(uint32_t, int32_t, uint32_t) = nullptr;
  void (*pop)() = nullptr;
  size_t (*report)(char*, size_t, uint32_t) = nullptr;
};

template <class F>
void bind(void* handle, F* slot, const char* name) {
  *slot = reinterpret_cast<F>(dlsym(handle, name));
}

// The library that defines the runtime table's functions; dlsym on it finds its exported GPU
// entry points (not this module's: its copy of the runtime is hidden and has none).
GpuRegionApi resolve() {
  GpuRegionApi api;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(runtime().region_begin), &info) == 0 ||
      info.dli_fname == nullptr) {
    return api;
  }
  void* handle = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return api;
  bind(handle, &api.start, "sp_cupti_start");
  bind(handle, &api.push, "sp_cupti_region_push");
  bind(handle, &api.pop, "sp_cupti_region_pop");
  bind(handle, &api.report, "sp_cupti_report");
  if (api.start == nullptr || api.push == nullptr || api.pop == nullptr || api.report == nullptr) {
    api = GpuRegionApi{};
  }
  // The handle is kept: the library is never unloaded (-z nodelete) and we keep its functions.
  return api;
}

const GpuRegionApi& gpu() {
  static const GpuRegionApi api = resolve();
  return api;
}

}  // namespace

void bind_gpu_regions(py::module_& m) {
  m.def("has_gpu_capture", [] { return gpu().push != nullptr; },
        "Whether the runtime in use has CUPTI capture (libstraggler_probe.so built with CUDA).");
  m.def("cupti_start", [] { return gpu().start != nullptr && gpu().start() == SP_OK; },
        "Starts CUPTI capture (idempotent; STRAGGLER_PROBE_CUPTI=0 declines). False when "
        "unavailable: the library said why, once.");
  // Hot path: no GIL release (the call returns at once while capture is off).
  m.def("cupti_region_push", [](uint32_t kind, int32_t microbatch, uint32_t name_id) {
    return gpu().push != nullptr && gpu().push(kind, microbatch, name_id) != 0;
  });
  m.def("cupti_region_pop", [] {
    if (gpu().pop != nullptr) gpu().pop();
  });
  m.def("cupti_report", [](uint32_t top_k) -> std::string {
    if (gpu().report == nullptr) {
      return "GPU capture inactive: the runtime in use has no GPU capture (libstraggler_probe.so "
             "with CUDA is not loaded)\n";
    }
    std::string text(gpu().report(nullptr, 0, top_k), '\0');
    if (!text.empty()) gpu().report(text.data(), text.size() + 1, top_k);
    return text;
  }, py::arg("top_k") = 10);
}

}  // namespace sp::pyext
