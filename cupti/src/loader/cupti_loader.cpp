#include "cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cupti_records.h"

namespace sp::cupti {
namespace {

std::string soname(const char* base, int major) {
  return std::string(base) + ".so." + std::to_string(major);
}

void* dlopen_noload(const std::string& name) {
  return dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
}

// Directory of a loaded library, so that a pip-style layout (nvidia/cu13/lib next to cudart) can
// be searched even when it is not on the loader path.
std::string directory_of(void* handle) {
  if (handle == nullptr) return {};
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return {};
  }
  std::string path = map->l_name;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string path_of(void* handle) {
  link_map* map = nullptr;
  if (handle == nullptr || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr ||
      map->l_name == nullptr) {
    return {};
  }
  return map->l_name;
}

template <typename Fn>
void bind(void* handle, const char* symbol, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(handle, symbol));
}

void bind_all(void* h, CuptiApi& api) {
  bind(h, "cuptiGetVersion", api.get_version);
  bind(h, "cuptiGetTimestamp", api.get_timestamp);
  bind(h, "cuptiGetResultString", api.get_result_string);
  bind(h, "cuptiActivityRegisterCallbacks", api.register_callbacks);
  bind(h, "cuptiActivityEnable", api.enable);
  bind(h, "cuptiActivityDisable", api.disable);
  bind(h, "cuptiActivityFlushAll", api.flush_all);
  bind(h, "cuptiActivityGetNextRecord", api.get_next_record);
  bind(h, "cuptiActivityGetNumDroppedRecords", api.get_num_dropped_records);
  bind(h, "cuptiActivityPushExternalCorrelationId", api.push_external_correlation_id);
  bind(h, "cuptiActivityPopExternalCorrelationId", api.pop_external_correlation_id);
  bind(h, "cuptiActivitySetAttribute", api.set_attribute);
  bind(h, "cuptiActivityEnableCudaEventDeviceTimestamps", api.enable_cuda_event_device_timestamps);
  bind(h, "cuptiActivityEnableDriverApi", api.enable_driver_api);
  bind(h, "cuptiActivityEnableRuntimeApi", api.enable_runtime_api);
  bind(h, "cuptiActivityFlushPeriod", api.flush_period);
}

LoadedCupti finish(void* handle, int major, bool was_loaded, bool require_driver) {
  LoadedCupti out;
  std::string why;
  if (require_driver && !cuda_driver_available(&why)) {
    // Not one call into CUPTI: some releases crash without a driver (cupti_loader.h).
    out.error = "no CUDA driver (" + why + ")";
    return out;
  }
  out.handle = handle;
  out.major = major;
  out.was_loaded = was_loaded;
  out.path = path_of(handle);
  bind_all(handle, out.api);
  if (!out.api.complete()) {
    out.error = "CUPTI at " + out.path + " lacks Activity API entry points";
    out.handle = nullptr;  // keep the library loaded (never dlclose CUPTI), but unusable
    return out;
  }
  if (out.api.get_version != nullptr) out.api.get_version(&out.version);
  return out;
}

}  // namespace

LoaderOptions loader_options_from_env() {
  LoaderOptions o;
  if (const char* p = std::getenv("STRAGGLER_PROBE_CUPTI_LIB"); p != nullptr && *p != '\0') {
    o.explicit_path = p;
  }
  if (const char* l = std::getenv("STRAGGLER_PROBE_CUPTI_LOAD"); l != nullptr && l[0] == '0') {
    o.allow_load = false;
  }
  return o;
}

bool cuda_driver_available(std::string* why) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL); h != nullptr) {
    dlclose(h);
    return true;
  }
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr) return true;  // kept loaded
  const char* e = dlerror();
  if (why != nullptr) *why = e != nullptr ? e : "libcuda.so.1 cannot be loaded";
  return false;
}

int resident_cupti_major() {
  for (int major : {13, 12, 11}) {
    if (void* h = dlopen_noload(soname("libcupti", major)); h != nullptr) {
      dlclose(h);  // drops only the reference RTLD_NOLOAD added
      return major;
    }
  }
  return 0;
}

int resident_cudart_major() {
  for (int major : {13, 12, 11}) {
    if (void* h = dlopen_noload(soname("libcudart", major)); h != nullptr) {
      dlclose(h);
      return major;
    }
  }
  return 0;
}

LoadedCupti load_cupti(const LoaderOptions& opts) {
  const int resident = resident_cupti_major();

  if (!opts.explicit_path.empty()) {
    void* h = dlopen(opts.explicit_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      LoadedCupti out;
      const char* e = dlerror();
      out.error = "cannot load STRAGGLER_PROBE_CUPTI_LIB=" + opts.explicit_path + ": " +
                  (e != nullptr ? e : "unknown error");
      return out;
    }
    int major = 0;
    for (int m : opts.majors) {
      if (opts.explicit_path.find(".so." + std::to_string(m)) != std::string::npos) major = m;
    }
    if (resident != 0 && major != 0 && major != resident) {
      LoadedCupti out;
      out.error = "STRAGGLER_PROBE_CUPTI_LIB is CUPTI " + std::to_string(major) +
                  " but the process already has CUPTI " + std::to_string(resident) +
                  "; refusing to mix majors";
      return out;
    }
    return finish(h, major, false, opts.require_driver);
  }

  // 1. A CUPTI already in the process (torch loaded it): always prefer it.
  for (int major : opts.majors) {
    if (void* h = dlopen_noload(soname("libcupti", major)); h != nullptr) {
      return finish(h, major, true, opts.require_driver);
    }
  }
  if (resident != 0) {
    LoadedCupti out;
    out.error = "the process has CUPTI " + std::to_string(resident) +
                ", a major this probe does not read; GPU kernel capture disabled";
    return out;
  }
  if (!opts.allow_load) {
    LoadedCupti out;
    out.error = "no CUPTI in the process and STRAGGLER_PROBE_CUPTI_LOAD=0";
    return out;
  }

  // 2. Load the CUPTI matching the CUDA runtime in the process, so a later CUPTI load by the
  //    application (same major) finds ours instead of adding a second copy.
  const int cudart = resident_cudart_major();
  if (cudart == 0) {
    LoadedCupti out;
    out.error = "no CUDA runtime in the process yet; CUPTI not loaded";
    out.retryable = true;
    return out;
  }
  bool known = false;
  for (int m : opts.majors) known = known || (m == cudart);
  if (!known) {
    LoadedCupti out;
    out.error = "CUDA runtime " + std::to_string(cudart) + " has no CUPTI major this probe reads";
    return out;
  }
  const std::string name = soname("libcupti", cudart);
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    // pip layouts: nvidia/cu13/lib (cudart and cupti side by side) or nvidia/cuda_cupti/lib.
    void* rt = dlopen_noload(soname("libcudart", cudart));
    const std::string dir = directory_of(rt);
    if (rt != nullptr) dlclose(rt);
    for (const std::string& cand : {dir + "/" + name, dir + "/../../cuda_cupti/lib/" + name}) {
      if (dir.empty()) break;
      h = dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) break;
    }
  }
  if (h == nullptr) {
    LoadedCupti out;
    out.error = "cannot load " + name + " (not on the library path)";
    return out;
  }
  return finish(h, cudart, false, opts.require_driver);
}

std::string result_string(const CuptiApi& api, CuptiResult r) {
  const char* s = nullptr;
  if (api.get_result_string != nullptr && api.get_result_string(r, &s) == kCuptiSuccess &&
      s != nullptr) {
    return std::string(s) + " (" + std::to_string(r) + ")";
  }
  return "CUPTI error " + std::to_string(r);
}

}  // namespace sp::cupti
