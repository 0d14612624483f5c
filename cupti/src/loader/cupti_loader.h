// Run-time loading of CUPTI by SONAME.
//
// The probe never links CUPTI (a missing DT_NEEDED kills a preloaded process at start-up). It
// reuses the copy already in the process (dlopen RTLD_NOLOAD: torch's libtorch_cpu.so needs
// libcupti.so.N) and, if none is loaded, loads the major that matches the CUDA runtime already in
// the process, so that a process never ends up with two CUPTI majors. The function table is plain
// data so that tests can substitute a fake CUPTI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sp::cupti {

using CuptiResult = int;
using BufferRequestedFn = void (*)(uint8_t** buffer, size_t* size, size_t* max_num_records);
using BufferCompletedFn = void (*)(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                   size_t valid_size);

// The Activity API subset we use. Any pointer may be null when the loaded CUPTI lacks the symbol
// (e.g. EnableCudaEventDeviceTimestamps before CUDA 13); callers check.
struct CuptiApi {
  CuptiResult (*get_version)(uint32_t* version) = nullptr;
  CuptiResult (*get_timestamp)(uint64_t* ts) = nullptr;
  CuptiResult (*get_result_string)(CuptiResult r, const char** str) = nullptr;
  CuptiResult (*register_callbacks)(BufferRequestedFn, BufferCompletedFn) = nullptr;
  CuptiResult (*enable)(uint32_t kind) = nullptr;
  CuptiResult (*disable)(uint32_t kind) = nullptr;
  CuptiResult (*flush_all)(uint32_t flag) = nullptr;
  CuptiResult (*get_next_record)(uint8_t* buffer, size_t valid, void** record) = nullptr;
  CuptiResult (*get_num_dropped_records)(void* ctx, uint32_t stream, size_t* dropped) = nullptr;
  CuptiResult (*push_external_correlation_id)(uint32_t kind, uint64_t id) = nullptr;
  CuptiResult (*pop_external_correlation_id)(uint32_t kind, uint64_t* last_id) = nullptr;
  CuptiResult (*set_attribute)(uint32_t attr, size_t* value_size, void* value) = nullptr;
  CuptiResult (*enable_cuda_event_device_timestamps)(uint8_t enable) = nullptr;
  CuptiResult (*enable_driver_api)(uint32_t cbid, uint8_t enable) = nullptr;
  CuptiResult (*enable_runtime_api)(uint32_t cbid, uint8_t enable) = nullptr;
  CuptiResult (*flush_period)(uint32_t ms) = nullptr;

  // The entry points without which the Activity API cannot work at all.
  bool complete() const {
    return get_timestamp && register_callbacks && enable && disable && flush_all &&
           get_next_record;
  }
};

struct LoadedCupti {
  CuptiApi api;
  void* handle = nullptr;
  int major = 0;            // 12 or 13 (from the SONAME that answered)
  uint32_t version = 0;     // cuptiGetVersion
  bool was_loaded = false;  // already in the process (RTLD_NOLOAD hit)
  std::string path;         // for messages
  std::string error;        // why loading failed (empty on success)
  bool retryable = false;   // failed only because CUDA is not in the process yet: try later
  bool ok() const { return handle != nullptr && api.complete(); }
};

struct LoaderOptions {
  // Explicit library (STRAGGLER_PROBE_CUPTI_LIB), tried before anything else.
  std::string explicit_path;
  // Majors to consider, newest first.
  int majors[2] = {13, 12};
  // Whether we may load CUPTI ourselves when the process has none. Always matched to the CUDA
  // runtime major already loaded; never a major different from one already present.
  bool allow_load = true;
  // Refuse CUPTI when the CUDA driver (libcuda.so.1) cannot be loaded, before calling into it:
  // some CUPTI releases (the CUDA 13.2 pip wheel's, seen here) crash on their first call, even
  // cuptiGetVersion, when there is no driver. Tests of record walking turn it off for a CUPTI
  // known to work without a driver.
  bool require_driver = true;
};

// Options from the environment (STRAGGLER_PROBE_CUPTI_LIB, STRAGGLER_PROBE_CUPTI_LOAD=0).
LoaderOptions loader_options_from_env();

// Loads CUPTI. Never throws; on failure `error` says why (one line).
LoadedCupti load_cupti(const LoaderOptions& opts);

// Whether libcuda.so.1 is in the process or can be loaded (it is then kept loaded: the CUDA
// runtime of this process loads it anyway). On failure *why says what the loader said.
bool cuda_driver_available(std::string* why);

// The CUPTI major already resident in the process (RTLD_NOLOAD probe), 0 if none.
int resident_cupti_major();
// The CUDA runtime major already resident in the process, 0 if none.
int resident_cudart_major();

// Human-readable CUPTI result ("CUPTI_ERROR_UNKNOWN (999)").
std::string result_string(const CuptiApi& api, CuptiResult r);

}  // namespace sp::cupti
