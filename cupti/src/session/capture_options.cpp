// Environment configuration of the CUPTI capture. A malformed value is named in one error line
// and the default is kept: nothing silently guessed.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "straggler_probe/gpu/cupti_capture.h"

namespace sp::gpu {
namespace {

bool parse_uint(const char* name, uint64_t min, uint64_t max, uint64_t* out, std::string* errors) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || v[0] == '-' || x < min || x > max) {
    if (errors != nullptr) {
      *errors += std::string(name) + "='" + v + "' is not an integer in [" + std::to_string(min) +
                 ", " + std::to_string(max) + "]; using the default\n";
    }
    return false;
  }
  *out = x;
  return true;
}

}  // namespace

CuptiCaptureOptions cupti_options_from_env(std::string* errors) {
  CuptiCaptureOptions o;
  if (const char* e = std::getenv("STRAGGLER_PROBE_CUPTI"); e != nullptr && *e != '\0') {
    if (std::strcmp(e, "0") == 0) {
      o.enabled = false;
    } else if (std::strcmp(e, "1") != 0 && errors != nullptr) {
      *errors += std::string("STRAGGLER_PROBE_CUPTI='") + e + "' must be 0 or 1; using 1\n";
    }
  }
  uint64_t v = 0;
  if (parse_uint("STRAGGLER_PROBE_CUPTI_FLUSH_MS", 10, 60000, &v, errors)) {
    o.flush_period_ms = static_cast<uint32_t>(v);
  }
  if (parse_uint("STRAGGLER_PROBE_CUPTI_BUFFER_KB", 64, 65536, &v, errors)) {
    o.buffer_bytes = static_cast<size_t>(v) * 1024;
  }
  if (parse_uint("STRAGGLER_PROBE_CUPTI_BUFFERS", 2, 1024, &v, errors)) {
    o.max_buffers = static_cast<size_t>(v);
  }
  if (const char* k = std::getenv("STRAGGLER_PROBE_CUPTI_KINDS"); k != nullptr && *k != '\0') {
    if (std::strcmp(k, "kernels") == 0) {
      o.kernels_only = true;
    } else if (std::strcmp(k, "all") != 0 && errors != nullptr) {
      *errors += std::string("STRAGGLER_PROBE_CUPTI_KINDS='") + k +
                 "' must be 'all' or 'kernels'; using 'all'\n";
    }
  }
  if (const char* m = std::getenv("STRAGGLER_PROBE_CUPTI_ATTRIBUTION"); m != nullptr && *m) {
    if (std::strcmp(m, "markers") == 0) {
      o.attribution = RegionAttributionMode::kMarkers;
    } else if (std::strcmp(m, "external") == 0) {
      o.attribution = RegionAttributionMode::kExternalCorrelation;
    } else if (std::strcmp(m, "off") == 0) {
      o.attribution = RegionAttributionMode::kOff;
    } else if (errors != nullptr) {
      *errors += "STRAGGLER_PROBE_CUPTI_ATTRIBUTION must be 'markers', 'external' or 'off'; "
                 "using 'markers'\n";
    }
  }
  return o;
}

}  // namespace sp::gpu
