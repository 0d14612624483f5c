#include "runtime_api.h"

#include <dlfcn.h>

namespace sp::pyext {
namespace {

template <class F>
bool bind(F* slot, const char* name) {
  // RTLD_DEFAULT sees the executable, LD_PRELOAD libraries and RTLD_GLOBAL objects, not this
  // module's own (hidden) copy of the runtime.
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (sym == nullptr) return false;
  *slot = reinterpret_cast<F>(sym);
  return true;
}

RuntimeApi built_in() {
  RuntimeApi api;
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
  api.set_clock_offset = &sp_set_clock_offset;
  api.pop_summary = &sp_pop_summary;
  api.get_stats = &sp_get_stats;
  api.last_warning = &sp_last_warning;
  return api;
}

RuntimeApi resolve() {
  RuntimeApi api;
  const bool all = bind(&api.abi_version, "sp_abi_version") &&
                   bind(&api.config_init, "sp_config_init") && bind(&api.init, "sp_init") &&
                   bind(&api.shutdown, "sp_shutdown") && bind(&api.is_enabled, "sp_is_enabled") &&
                   bind(&api.now_ns, "sp_now_ns") && bind(&api.intern, "sp_intern") &&
                   bind(&api.region_begin, "sp_region_begin") &&
                   bind(&api.region_end, "sp_region_end") && bind(&api.record, "sp_record") &&
                   bind(&api.mark_step, "sp_mark_step") && bind(&api.annotate, "sp_annotate") &&
                   bind(&api.flush, "sp_flush") && bind(&api.set_topology, "sp_set_topology") &&
                   bind(&api.set_clock_offset, "sp_set_clock_offset") &&
                   bind(&api.pop_summary, "sp_pop_summary") &&
                   bind(&api.get_stats, "sp_get_stats") &&
                   bind(&api.last_warning, "sp_last_warning");
  // A preloaded library of another ABI version (or a partial one) is not used: the built-in
  // copy is always consistent with this module's headers.
  if (all && api.abi_version() == SP_ABI_VERSION) {
    api.preloaded = true;
    return api;
  }
  return built_in();
}

}  // namespace

const RuntimeApi& runtime() {
  static const RuntimeApi api = resolve();
  return api;
}

}  // namespace sp::pyext
