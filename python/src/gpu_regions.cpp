#include "gpu_regions.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime_table.h"

namespace py = pybind11;

namespace sp::pyext {

void bind_gpu_regions(py::module_& m) {
  m.def("has_gpu_capture", [] { return runtime().cupti_region_push != nullptr; },
        "Whether the runtime in use has CUPTI capture (libstraggler_probe.so built with CUDA).");
  m.def("cupti_start", [] {
    return runtime().cupti_start != nullptr && runtime().cupti_start() == SP_OK;
  }, "Starts CUPTI capture (idempotent; STRAGGLER_PROBE_CUPTI=0 declines). False when "
     "unavailable: the library said why, once.");
  // Hot path: no GIL release (the call returns at once while capture is off).
  m.def("cupti_region_push", [](uint32_t kind, int32_t microbatch, uint32_t name_id) {
    return runtime().cupti_region_push != nullptr &&
           runtime().cupti_region_push(kind, microbatch, name_id) != 0;
  });
  m.def("cupti_region_pop", [] {
    if (runtime().cupti_region_pop != nullptr) runtime().cupti_region_pop();
  });
  m.def("gpu_graph_capture", [](bool begin) {
    return runtime().gpu_graph_capture != nullptr && runtime().gpu_graph_capture(begin ? 1 : 0) == SP_OK;
  }, "A CUDA graph capture begins (True) or ends (False): the runtime's CUDA-event pollers query "
     "nothing meanwhile (graph_capture.h). False when the runtime has no GPU capture.");
  m.def("cupti_report", [](uint32_t top_k) -> std::string {
    const auto report = runtime().cupti_report;
    if (report == nullptr) {
      return "GPU capture inactive: the runtime in use has no GPU capture (libstraggler_probe.so "
             "with CUDA is not loaded)\n";
    }
    std::string text(report(nullptr, 0, top_k), '\0');
    if (!text.empty()) report(text.data(), text.size() + 1, top_k);
    return text;
  }, py::arg("top_k") = 10);
}

}  // namespace sp::pyext
