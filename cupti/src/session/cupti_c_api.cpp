// The C ABI over CuptiCapture. Every entry point is guarded (straggler_probe/c_abi_guard.h): no
// exception crosses it; one makes the probe step aside.
#include "straggler_probe/gpu/cupti_c_api.h"

#include <cstring>
#include <string>

#include "straggler_probe/c_abi_guard.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/gpu/graph_capture.h"

using sp::gpu::CuptiCapture;
using sp::runtime::guarded;

namespace {

constexpr int kInternal = SP_ERR_INTERNAL;

int ok_or_disabled(bool ok) { return ok ? SP_OK : SP_ERR_DISABLED; }

}  // namespace

extern "C" {

int sp_cupti_start(void) {
  return guarded("sp_cupti_start", kInternal,
                 [] { return ok_or_disabled(CuptiCapture::instance().start()); });
}

int sp_cupti_stop(void) {
  return guarded("sp_cupti_stop", kInternal, [] {
    CuptiCapture::instance().stop();
    return static_cast<int>(SP_OK);
  });
}

int sp_cupti_pause(const char* reason) {
  return guarded("sp_cupti_pause", kInternal,
                 [&] { return ok_or_disabled(CuptiCapture::instance().pause(reason)); });
}

int sp_cupti_resume(void) {
  return guarded("sp_cupti_resume", kInternal,
                 [] { return ok_or_disabled(CuptiCapture::instance().resume()); });
}

int sp_cupti_request_flush(void) {
  return guarded("sp_cupti_request_flush", kInternal, [] {
    CuptiCapture::instance().request_flush();
    return static_cast<int>(SP_OK);
  });
}

int sp_cupti_region_push(uint32_t kind, int32_t microbatch, uint32_t name_id) {
  return guarded("sp_cupti_region_push", 0, [&] {
    return CuptiCapture::instance().push_region(kind, microbatch, name_id) ? 1 : 0;
  });
}

void sp_cupti_region_pop(void) {
  sp::runtime::guarded_void("sp_cupti_region_pop", [] { CuptiCapture::instance().pop_region(); });
}

int sp_cupti_get_stats(sp_cupti_stats* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  return guarded("sp_cupti_get_stats", kInternal, [&] {
    const sp::gpu::CuptiCaptureStats s = CuptiCapture::instance().stats();
    sp_cupti_stats r{};
    r.struct_size = sizeof(r);
#define SP_COPY(type, name) r.name = static_cast<type>(s.name);
    SP_CUPTI_STATS_FIELDS(SP_COPY)
#undef SP_COPY
    // An older caller may pass a smaller struct: copy only what it has room for.
    const size_t n = out->struct_size != 0 && out->struct_size < sizeof(r) ? out->struct_size
                                                                           : sizeof(r);
    std::memcpy(out, &r, n);
    return static_cast<int>(SP_OK);
  });
}

int sp_gpu_graph_capture(int begin) {
  return guarded("sp_gpu_graph_capture", kInternal, [&] {
    if (begin != 0) {
      sp::gpu::graph_capture_begin();
    } else {
      sp::gpu::graph_capture_end();
    }
    return static_cast<int>(SP_OK);
  });
}

size_t sp_cupti_report(char* buf, size_t len, uint32_t top_k) {
  return guarded("sp_cupti_report", size_t{0}, [&] {
    const std::string text = CuptiCapture::instance().report(top_k == 0 ? 5 : top_k);
    if (buf != nullptr && len > 0) {
      const size_t n = text.size() < len - 1 ? text.size() : len - 1;
      std::memcpy(buf, text.data(), n);
      buf[n] = '\0';
    }
    return text.size();
  });
}

}  // extern "C"
