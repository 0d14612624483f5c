// The C ABI over CuptiCapture. No exceptions cross it.
#include "straggler_probe/gpu/cupti_c_api.h"

#include <cstring>
#include <string>

#include "straggler_probe/gpu/cupti_capture.h"

using sp::gpu::CuptiCapture;

extern "C" {

int sp_cupti_start(void) {
  try {
    return CuptiCapture::instance().start() ? SP_OK : SP_ERR_DISABLED;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

int sp_cupti_stop(void) {
  try {
    CuptiCapture::instance().stop();
    return SP_OK;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

int sp_cupti_pause(const char* reason) {
  try {
    return CuptiCapture::instance().pause(reason) ? SP_OK : SP_ERR_DISABLED;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

int sp_cupti_resume(void) {
  try {
    return CuptiCapture::instance().resume() ? SP_OK : SP_ERR_DISABLED;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

int sp_cupti_request_flush(void) {
  CuptiCapture::instance().request_flush();
  return SP_OK;
}

int sp_cupti_region_push(uint32_t kind, int32_t microbatch, uint32_t name_id) {
  return CuptiCapture::instance().push_region(kind, microbatch, name_id) ? 1 : 0;
}

void sp_cupti_region_pop(void) { CuptiCapture::instance().pop_region(); }

int sp_cupti_get_stats(sp_cupti_stats* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  try {
    const sp::gpu::CuptiCaptureStats s = CuptiCapture::instance().stats();
    sp_cupti_stats r{};
    r.struct_size = sizeof(r);
    r.active = s.active ? 1 : 0;
    r.paused = s.paused ? 1 : 0;
    r.cupti_major = s.cupti_major;
    r.windows = s.windows;
    r.kernels = s.kernels;
    r.memcpys = s.memcpys;
    r.tagged_activities = s.tagged_activities;
    r.untagged_activities = s.untagged_activities;
    r.nccl_kernels = s.nccl_kernels;
    r.dropped_records = s.dropped_records;
    r.buffers_refused = s.buffers_refused;
    r.events_emitted = s.events_emitted;
    r.clock_skew_ppm = s.clock_skew_ppm;
    r.clock_offset_ns = s.clock_offset_ns;
    r.clock_uncertainty_ns = s.clock_uncertainty_ns;
    r.time_base_changes = s.time_base_changes;
    r.pauses = static_cast<uint32_t>(s.pauses);
    // An older caller may pass a smaller struct: copy only what it has room for.
    const size_t n = out->struct_size != 0 && out->struct_size < sizeof(r) ? out->struct_size
                                                                           : sizeof(r);
    std::memcpy(out, &r, n);
    return SP_OK;
  } catch (...) {
    return SP_ERR_INTERNAL;
  }
}

size_t sp_cupti_report(char* buf, size_t len, uint32_t top_k) {
  try {
    const std::string text = CuptiCapture::instance().report(top_k == 0 ? 5 : top_k);
    if (buf != nullptr && len > 0) {
      const size_t n = text.size() < len - 1 ? text.size() : len - 1;
      std::memcpy(buf, text.data(), n);
      buf[n] = '\0';
    }
    return text.size();
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
