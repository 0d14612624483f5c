// The handful of CUDA runtime calls the interposer's stream timing needs, resolved at run time
// from the libcudart already in the process (never loaded by us: a process that has no CUDA
// runtime has no CUDA streams to time). A plain function table, so tests can run the timing logic
// against a simulated GPU clock.
#pragma once

namespace sp::nccl {

struct CudaRt {
  // Return values are cudaError_t (0 = success, 600 = cudaErrorNotReady).
  int (*event_create_with_flags)(void** event, unsigned flags) = nullptr;
  int (*event_record)(void* event, void* stream) = nullptr;
  int (*event_query)(void* event) = nullptr;
  int (*event_synchronize)(void* event) = nullptr;
  int (*event_elapsed_time)(float* ms, void* start, void* end) = nullptr;
  int (*event_destroy)(void* event) = nullptr;
  int (*stream_is_capturing)(void* stream, int* status) = nullptr;  // 0 = not capturing
  int (*stream_create_with_flags)(void** stream, unsigned flags) = nullptr;
  int (*get_device)(int* device) = nullptr;
  int (*set_device)(int device) = nullptr;
  // Optional: cudaThreadExchangeStreamCaptureMode (mode: 0 global, 1 thread-local, 2 relaxed).
  int (*thread_exchange_capture_mode)(int* mode) = nullptr;

  bool complete() const {
    return event_create_with_flags && event_record && event_query && event_synchronize &&
           event_elapsed_time && event_destroy && stream_is_capturing &&
           stream_create_with_flags && get_device && set_device;
  }
};

constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNotReady = 600;
constexpr unsigned kCudaEventDefault = 0;
constexpr unsigned kCudaStreamNonBlocking = 1;
constexpr int kCudaStreamCaptureModeRelaxed = 2;

// Binds the table to the resident libcudart.so.13 / .12; false (table untouched) if none.
bool load_resident_cudart(CudaRt* out);

}  // namespace sp::nccl
