#include "fake_cuda_driver.h"

namespace sp::cupti::testing {
namespace {

FakeCudaDriver g_driver;
int g_context_object = 0;
int g_stream_object = 0;

CuResult ctx_get_current(CuContext* ctx) {
  *ctx = g_driver.has_context ? &g_context_object : nullptr;
  return kCuSuccess;
}
CuResult mem_alloc(CuDevicePtr* ptr, size_t) {
  ++g_driver.allocations;
  *ptr = 0x1000;
  return kCuSuccess;
}
CuResult stream_create(CuStream* stream, unsigned) {
  ++g_driver.streams;
  *stream = &g_stream_object;
  return kCuSuccess;
}
CuResult stream_get_id(CuStream, unsigned long long* id) {
  *id = 77;
  return kCuSuccess;
}
CuResult memset_d32_async(CuDevicePtr, unsigned value, size_t, CuStream) {
  if (g_driver.memset_result != kCuSuccess) return g_driver.memset_result;
  g_driver.values.push_back(value);
  return kCuSuccess;
}
CuResult get_error_name(CuResult, const char** name) {
  *name = "CUDA_ERROR_FAKE";
  return kCuSuccess;
}
CuResult exchange_capture_mode(int*) {
  ++g_driver.capture_mode_exchanges;
  return kCuSuccess;
}

}  // namespace

FakeCudaDriver& fake_driver() { return g_driver; }
void reset_fake_driver() { g_driver = FakeCudaDriver(); }

CudaDriverApi fake_driver_api() {
  CudaDriverApi a;
  a.ctx_get_current = &ctx_get_current;
  a.mem_alloc = &mem_alloc;
  a.stream_create = &stream_create;
  a.stream_get_id = &stream_get_id;
  a.memset_d32_async = &memset_d32_async;
  a.get_error_name = &get_error_name;
  a.exchange_capture_mode = &exchange_capture_mode;
  return a;
}

}  // namespace sp::cupti::testing
