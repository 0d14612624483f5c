#include "interposer/cuda_runtime_api.h"

#include <dlfcn.h>

#include <initializer_list>

namespace sp::nccl {
namespace {

template <typename Fn>
void bind(void* h, const char* name, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(h, name));
}

}  // namespace

bool load_resident_cudart(CudaRt* out) {
  for (const char* name : {"libcudart.so.13", "libcudart.so.12"}) {
    void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (h == nullptr) continue;
    CudaRt t;
    bind(h, "cudaEventCreateWithFlags", t.event_create_with_flags);
    bind(h, "cudaEventRecord", t.event_record);
    bind(h, "cudaEventQuery", t.event_query);
    bind(h, "cudaEventSynchronize", t.event_synchronize);
    bind(h, "cudaEventElapsedTime", t.event_elapsed_time);
    bind(h, "cudaEventDestroy", t.event_destroy);
    bind(h, "cudaStreamIsCapturing", t.stream_is_capturing);
    bind(h, "cudaStreamCreateWithFlags", t.stream_create_with_flags);
    bind(h, "cudaGetDevice", t.get_device);
    bind(h, "cudaSetDevice", t.set_device);
    bind(h, "cudaThreadExchangeStreamCaptureMode", t.thread_exchange_capture_mode);
    if (t.complete()) {
      *out = t;
      return true;  // the reference from RTLD_NOLOAD is kept while the table is in use
    }
    dlclose(h);
  }
  return false;
}

}  // namespace sp::nccl
