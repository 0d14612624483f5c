#include "runtime_table.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sp::pyext {
namespace {

constexpr const char* kLibraryName = "libstraggler_probe.so";  // also its SONAME

template <class F>
bool bind(void* handle, F* slot, const char* name) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) return false;
  *slot = reinterpret_cast<F>(sym);
  return true;
}

// The C ABI from `handle` (RTLD_DEFAULT: the global scope, which holds a preloaded library but
// not this module's hidden copy). false when a function is missing or the ABI differs: the
// built-in copy is always consistent with this module's headers.
bool bind_all(void* handle, RuntimeTable* api) {
  const bool all =
      bind(handle, &api->abi_version, "sp_abi_version") &&
      bind(handle, &api->config_init, "sp_config_init") && bind(handle, &api->init, "sp_init") &&
      bind(handle, &api->shutdown, "sp_shutdown") &&
      bind(handle, &api->is_enabled, "sp_is_enabled") && bind(handle, &api->now_ns, "sp_now_ns") &&
      bind(handle, &api->intern, "sp_intern") &&
      bind(handle, &api->region_begin, "sp_region_begin") &&
      bind(handle, &api->region_end, "sp_region_end") && bind(handle, &api->record, "sp_record") &&
      bind(handle, &api->mark_step, "sp_mark_step") &&
      bind(handle, &api->annotate, "sp_annotate") && bind(handle, &api->flush, "sp_flush") &&
      bind(handle, &api->set_topology, "sp_set_topology") &&
      bind(handle, &api->set_rank, "sp_set_rank") &&
      bind(handle, &api->set_clock_offset, "sp_set_clock_offset") &&
      bind(handle, &api->pop_summary, "sp_pop_summary") &&
      bind(handle, &api->get_stats, "sp_get_stats") &&
      bind(handle, &api->last_warning, "sp_last_warning");
  if (!all || api->abi_version() != SP_ABI_VERSION) return false;
  // Optional: a library built without CUDA has no GPU capture.
  const bool gpu = bind(handle, &api->cupti_start, "sp_cupti_start") &&
                   bind(handle, &api->cupti_pause, "sp_cupti_pause") &&
                   bind(handle, &api->cupti_resume, "sp_cupti_resume") &&
                   bind(handle, &api->cupti_get_stats, "sp_cupti_get_stats") &&
                   bind(handle, &api->cupti_region_push, "sp_cupti_region_push") &&
                   bind(handle, &api->cupti_region_pop, "sp_cupti_region_pop") &&
                   bind(handle, &api->cupti_report, "sp_cupti_report");
  if (!gpu) {
    api->cupti_start = nullptr;
    api->cupti_pause = nullptr;
    api->cupti_resume = nullptr;
    api->cupti_get_stats = nullptr;
    api->cupti_region_push = nullptr;
    api->cupti_region_pop = nullptr;
    api->cupti_report = nullptr;
  }
  if (!gpu || !bind(handle, &api->gpu_graph_capture, "sp_gpu_graph_capture")) {
    api->gpu_graph_capture = nullptr;
  }
  if (!bind(handle, &api->get_heartbeat, "sp_get_heartbeat")) api->get_heartbeat = nullptr;
  if (!bind(handle, &api->set_recording_paused, "sp_set_recording_paused") ||
      !bind(handle, &api->get_pause_state, "sp_get_pause_state")) {
    api->set_recording_paused = nullptr;
    api->get_pause_state = nullptr;
  }
  return true;
}

RuntimeTable built_in(std::string warning) {
  RuntimeTable api;
  api.abi_version = &sp_abi_version;
  api.config_init = &sp_config_init;
  api.init = &sp_init;
  api.shutdown = &sp_shutdown;
  api.is_enabled = &sp_is_enabled;
  api.now_ns = &sp_now_ns;
  api.intern = &sp_intern;
  api.region_begin = &sp_region_begin;
  api.region_end = &sp_region_end;
  api.record = &sp_record;
  api.mark_step = &sp_mark_step;
  api.annotate = &sp_annotate;
  api.flush = &sp_flush;
  api.set_topology = &sp_set_topology;
  api.set_rank = &sp_set_rank;
  api.set_clock_offset = &sp_set_clock_offset;
  api.pop_summary = &sp_pop_summary;
  api.get_stats = &sp_get_stats;
  api.last_warning = &sp_last_warning;
  api.get_heartbeat = &sp_get_heartbeat;
  api.set_recording_paused = &sp_set_recording_paused;
  api.get_pause_state = &sp_get_pause_state;
  api.source = "built-in";
  api.warning = std::move(warning);
  return api;
}

std::string path_of(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  char buf[4096];
  return realpath(info.dli_fname, buf) != nullptr ? std::string(buf) : std::string(info.dli_fname);
}

// Where libstraggler_probe.so may be, in order. $STRAGGLER_PROBE_LIB, when set, is the only one.
std::vector<std::string> candidates() {
  if (const char* env = std::getenv("STRAGGLER_PROBE_LIB"); env != nullptr && *env != '\0') {
    return {env};
  }
  std::vector<std::string> out;
  const std::string self = path_of(reinterpret_cast<const void*>(&candidates));
  if (const auto slash = self.rfind('/'); slash != std::string::npos) {
    out.push_back(self.substr(0, slash + 1) + kLibraryName);  // installed next to the package
  }
#ifdef SP_BUILD_PROBE_LIB
  out.emplace_back(SP_BUILD_PROBE_LIB);  // this build tree's
#endif
  return out;
}

RuntimeTable resolve() {
  RuntimeTable api;
  if (bind_all(RTLD_DEFAULT, &api)) {  // LD_PRELOAD
    api.source = "preloaded";
    api.library = path_of(reinterpret_cast<const void*>(api.abi_version));
    return api;
  }
  const std::vector<std::string> paths = candidates();
  // Already loaded without being global (NCCL's profiler plugin, a ctypes.CDLL): by SONAME or
  // by one of the paths. Loading nothing new here.
  void* handle = dlopen(kLibraryName, RTLD_NOW | RTLD_NOLOAD);
  for (size_t i = 0; handle == nullptr && i < paths.size(); ++i) {
    handle = dlopen(paths[i].c_str(), RTLD_NOW | RTLD_NOLOAD);
  }
  std::string why;
  for (size_t i = 0; handle == nullptr && i < paths.size(); ++i) {
    if (access(paths[i].c_str(), F_OK) != 0) {
      why += "\n  " + paths[i] + ": not found";
      continue;
    }
    // RTLD_LOCAL: its nccl* interposers must not take over the process's NCCL calls.
    handle = dlopen(paths[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      why += "\n  " + paths[i] + ": " + (error != nullptr ? error : "dlopen failed");
    }
  }
  if (handle != nullptr) {
    RuntimeTable shared;
    if (bind_all(handle, &shared)) {
      shared.source = "shared";
      shared.library = path_of(reinterpret_cast<const void*>(shared.abi_version));
      return shared;
    }
    why += "\n  " + path_of(dlsym(handle, "sp_init")) +
           ": not the C ABI version " + std::to_string(SP_ABI_VERSION) + " (another build?)";
  }
  if (paths.empty()) why += "\n  (no place to look: set STRAGGLER_PROBE_LIB)";
  return built_in("libstraggler_probe.so could not be loaded; the probe uses the runtime built "
                  "into straggler_probe._core, without GPU capture, and an NCCL profiler plugin "
                  "loaded later would be a second runtime. Looked at:" + why);
}

}  // namespace

rank_pipeline::RuntimeCalls pipeline_calls(const RuntimeTable& table) {
  rank_pipeline::RuntimeCalls c;
  c.pop_summary = table.pop_summary;
  c.now_ns = table.now_ns;
  c.set_clock_offset = table.set_clock_offset;
  c.get_stats = table.get_stats;
  c.get_heartbeat = table.get_heartbeat;
  c.set_recording_paused = table.set_recording_paused;
  c.get_pause_state = table.get_pause_state;
  c.cupti_get_stats = table.cupti_get_stats;
  c.cupti_report = table.cupti_report;
  return c;
}

const RuntimeTable& runtime() {
  static const RuntimeTable api = [] {
    RuntimeTable r = resolve();
    if (!r.warning.empty()) std::fprintf(stderr, "[straggler_probe] [warning] %s\n", r.warning.c_str());
    return r;
  }();
  return api;
}

}  // namespace sp::pyext
