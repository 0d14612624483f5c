// The few CUDA driver entry points the launch markers use, resolved from the libcuda.so.1 that
// the process already has (RTLD_NOLOAD: the probe never brings a driver in, and never links one).
// A plain table of function pointers, so tests substitute a fake driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sp::cupti {

using CuResult = int;  // CUresult; 0 = CUDA_SUCCESS
using CuContext = void*;
using CuStream = void*;
using CuDevicePtr = unsigned long long;

constexpr CuResult kCuSuccess = 0;
constexpr unsigned kCuStreamNonBlocking = 0x1;
constexpr int kCuCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

struct CudaDriverApi {
  CuResult (*ctx_get_current)(CuContext* ctx) = nullptr;                  // cuCtxGetCurrent
  CuResult (*mem_alloc)(CuDevicePtr* ptr, size_t bytes) = nullptr;        // cuMemAlloc_v2
  CuResult (*stream_create)(CuStream* stream, unsigned flags) = nullptr;  // cuStreamCreate
  CuResult (*stream_get_id)(CuStream stream, unsigned long long* id) = nullptr;  // cuStreamGetId
  CuResult (*memset_d32_async)(CuDevicePtr ptr, unsigned value, size_t n,
                               CuStream stream) = nullptr;                // cuMemsetD32Async
  CuResult (*get_error_name)(CuResult r, const char** name) = nullptr;    // cuGetErrorName
  // cuThreadExchangeStreamCaptureMode (optional): a marker is launched in the relaxed mode, so a
  // graph capture under way on any thread is neither joined nor invalidated by it.
  CuResult (*exchange_capture_mode)(int* mode) = nullptr;

  bool complete() const {
    return ctx_get_current && mem_alloc && stream_create && stream_get_id && memset_d32_async;
  }
};

// Resolves the table from the resident libcuda.so.1. On failure returns an incomplete table and
// says why in *why.
CudaDriverApi resolve_cuda_driver(std::string* why);

// "CUDA_ERROR_INVALID_CONTEXT (201)" when the driver can name it, else "CUresult 201".
std::string cu_result_string(const CudaDriverApi& api, CuResult r);

}  // namespace sp::cupti
