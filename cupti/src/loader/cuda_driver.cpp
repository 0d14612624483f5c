#include "cuda_driver.h"

#include <dlfcn.h>

namespace sp::cupti {
namespace {

template <typename Fn>
void resolve(void* handle, const char* symbol, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(handle, symbol));
}

}  // namespace

CudaDriverApi resolve_cuda_driver(std::string* why) {
  CudaDriverApi api;
  // Only the driver the process already loaded: the markers are for a job that runs CUDA.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (h == nullptr) {
    if (why != nullptr) *why = "libcuda.so.1 is not loaded in this process";
    return api;
  }
  resolve(h, "cuCtxGetCurrent", api.ctx_get_current);
  resolve(h, "cuMemAlloc_v2", api.mem_alloc);
  resolve(h, "cuStreamCreate", api.stream_create);
  resolve(h, "cuStreamGetId", api.stream_get_id);  // CUDA 12.0+
  resolve(h, "cuMemsetD32Async", api.memset_d32_async);
  resolve(h, "cuGetErrorName", api.get_error_name);
  resolve(h, "cuThreadExchangeStreamCaptureMode", api.exchange_capture_mode);
  if (!api.complete() && why != nullptr) {
    *why = "libcuda.so.1 lacks cuCtxGetCurrent/cuMemAlloc_v2/cuStreamCreate/cuStreamGetId/"
           "cuMemsetD32Async (a driver older than CUDA 12?)";
  }
  return api;
}

std::string cu_result_string(const CudaDriverApi& api, CuResult r) {
  const char* name = nullptr;
  if (api.get_error_name != nullptr && api.get_error_name(r, &name) == kCuSuccess &&
      name != nullptr) {
    return std::string(name) + " (" + std::to_string(r) + ")";
  }
  return "CUresult " + std::to_string(r);
}

}  // namespace sp::cupti
