// libstraggler_probe.so as a host process sees it: it exports exactly the listed C symbols, needs
// no CUDA/NCCL/torch/Python library, runs no static constructors, and works when dlopen'ed,
// including every entry point before sp_init.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "elf_reader.h"
#include "straggler_probe/probe.h"
#include "straggler_probe/step_summary.h"

namespace sp::runtime::testing {
namespace {

std::set<std::string> export_list() {
  std::ifstream in(SP_PROBE_EXPORT_MAP);
  EXPECT_TRUE(in) << "cannot read " << SP_PROBE_EXPORT_MAP;
  std::set<std::string> names;
  bool in_global = false;
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    std::string word = line.substr(first);
    if (word == "global:") {
      in_global = true;
    } else if (word == "local:") {
      in_global = false;
    } else if (in_global && word.back() == ';') {
      names.insert(word.substr(0, word.size() - 1));
    }
  }
  return names;
}

ElfInfo library_elf() {
  std::string error;
  auto info = read_elf(SP_PROBE_SO, &error);
  EXPECT_TRUE(info) << error;
  return info.value_or(ElfInfo{});
}

TEST(SharedLibrary, ExportsExactlyTheListedSymbols) {
  const std::set<std::string> listed = export_list();
  ASSERT_TRUE(listed.count("sp_init"));
  std::set<std::string> exported;
  for (const DynamicSymbol& s : library_elf().dynamic_symbols) {
    if (s.defined && s.global) exported.insert(s.name);
  }
  for (const std::string& name : exported) {
    EXPECT_TRUE(listed.count(name)) << "exported but not in the export list: " << name;
  }
  for (const std::string& name : listed) {
    EXPECT_TRUE(exported.count(name)) << "listed but not exported: " << name;
  }
}

TEST(SharedLibrary, NeedsNoGpuFrameworkOrLoggingLibrary) {
  const ElfInfo elf = library_elf();
  std::ostringstream all;
  for (const std::string& n : elf.needed) all << n << ' ';
  for (const std::string& n : elf.needed) {
    for (const char* bad : {"cuda", "cupti", "nccl", "torch", "python", "spdlog", "fmt", "c10"}) {
      EXPECT_EQ(n.find(bad), std::string::npos) << "DT_NEEDED " << n << " (all: " << all.str() << ")";
    }
  }
  EXPECT_FALSE(elf.needed.empty()) << "expected at least libc";
}

// Load-time hooks other folders declared (sp_probe_add_to_library LOAD_TIME_HOOKS), one a line.
std::vector<std::string> declared_load_time_hooks() {
  std::ifstream in(SP_PROBE_LOAD_TIME_HOOKS);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

TEST(SharedLibrary, RunsNoUndeclaredCodeAtLoad) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "sanitizer instrumentation adds its own constructors";
#endif
  // The toolchain's frame_dummy is always there; anything else must be a declared load-time
  // hook (the runtime itself has none: its state is created by sp_init).
  const ElfInfo elf = library_elf();
  const std::vector<std::string> declared = declared_load_time_hooks();
  EXPECT_EQ(elf.init_array_functions.size(), elf.init_array_entries);
  for (const std::string& fn : elf.init_array_functions) {
    if (fn == "frame_dummy") continue;
    bool is_declared = false;
    for (const std::string& d : declared) is_declared |= fn.find(d) != std::string::npos;
    EXPECT_TRUE(is_declared) << "constructor " << fn << " runs at load but is not declared with "
                             << "sp_probe_add_to_library(LOAD_TIME_HOOKS ...)";
  }
}

TEST(SharedLibrary, PreloadedIntoAProgramThatNeverCallsItDoesNothing) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitized library cannot be preloaded into an uninstrumented program";
#endif
  // LD_PRELOAD into a process that is not a training rank: no output, no thread, no harm.
  const std::string cmd = std::string("LD_PRELOAD=") + SP_PROBE_SO + " /bin/sh -c 'echo ok' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(output, "ok\n");
}

// The library's entry points, looked up as a host process would.
struct Api {
  decltype(&sp_config_init) config_init;
  decltype(&sp_init) init;
  decltype(&sp_shutdown) shutdown;
  decltype(&sp_is_enabled) is_enabled;
  decltype(&sp_now_ns) now_ns;
  decltype(&sp_record) record;
  decltype(&sp_region_begin) region_begin;
  decltype(&sp_region_end) region_end;
  decltype(&sp_mark_step) mark_step;
  decltype(&sp_flush) flush;
  decltype(&sp_pop_summary) pop_summary;
  decltype(&sp_get_stats) get_stats;
  decltype(&sp_last_warning) last_warning;
  decltype(&sp_intern) intern;
};

template <class F>
void lookup(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  ASSERT_NE(*out, nullptr) << name << ": " << dlerror();
}

TEST(SharedLibrary, DlopenedLibraryIsInertBeforeInitAndWorksAfter) {
  void* handle = dlopen(SP_PROBE_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  Api api{};
  lookup(handle, "sp_config_init", &api.config_init);
  lookup(handle, "sp_init", &api.init);
  lookup(handle, "sp_shutdown", &api.shutdown);
  lookup(handle, "sp_is_enabled", &api.is_enabled);
  lookup(handle, "sp_now_ns", &api.now_ns);
  lookup(handle, "sp_record", &api.record);
  lookup(handle, "sp_region_begin", &api.region_begin);
  lookup(handle, "sp_region_end", &api.region_end);
  lookup(handle, "sp_mark_step", &api.mark_step);
  lookup(handle, "sp_flush", &api.flush);
  lookup(handle, "sp_pop_summary", &api.pop_summary);
  lookup(handle, "sp_get_stats", &api.get_stats);
  lookup(handle, "sp_last_warning", &api.last_warning);
  lookup(handle, "sp_intern", &api.intern);

  // Never initialised (this copy of the runtime is separate from the one linked into the test).
  sp_event ev{};
  ev.start_ns = api.now_ns();
  ev.end_ns = ev.start_ns + 10;
  ev.kind = SP_OP_COLLECTIVE;
  ev.coll = SP_COLL_ALL_REDUCE;
  EXPECT_EQ(api.is_enabled(), 0);
  EXPECT_EQ(api.record(&ev), SP_ERR_DISABLED);
  EXPECT_EQ(api.region_begin(SP_OP_FORWARD, 0, 0), 0u);
  EXPECT_EQ(api.region_end(1), SP_ERR_DISABLED);
  EXPECT_EQ(api.mark_step(0), SP_ERR_DISABLED);
  EXPECT_EQ(api.flush(), SP_ERR_DISABLED);
  EXPECT_EQ(api.intern("x"), 0u);
  sp_stats st{};
  EXPECT_EQ(api.get_stats(&st), SP_ERR_DISABLED);
  size_t size = 0;
  EXPECT_EQ(api.pop_summary(nullptr, 0, &size, 0), SP_ERR_DISABLED);
  ASSERT_NE(api.last_warning(), nullptr);
  EXPECT_EQ(api.shutdown(), SP_ERR_DISABLED);

  sp_config cfg;
  api.config_init(&cfg);
  cfg.rank = 1;
  cfg.world_size = 2;
  cfg.local_rank = 1;
  ASSERT_EQ(api.init(&cfg), SP_OK) << api.last_warning();
  const uint64_t token = api.region_begin(SP_OP_FORWARD, 0, api.intern("forward"));
  EXPECT_EQ(api.record(&ev), SP_OK);
  EXPECT_EQ(api.region_end(token), SP_OK);
  ASSERT_EQ(api.mark_step(11), SP_OK);
  ASSERT_EQ(api.flush(), SP_OK);
  ASSERT_EQ(api.pop_summary(nullptr, 0, &size, 5000), SP_ERR_INVALID);
  std::string buf(size, '\0');
  ASSERT_EQ(api.pop_summary(buf.data(), buf.size(), &size, 0), SP_OK);
  StepSummary s;
  std::string error;
  ASSERT_TRUE(decode_summary(buf, &s, &error)) << error;
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.step, 11);
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(api.shutdown(), SP_OK);
  EXPECT_EQ(api.get_stats(&st), SP_OK);
  EXPECT_EQ(st.events_recorded, 2u);
  // No dlclose: the library is built -z nodelete (it may have started threads).
}

}  // namespace
}  // namespace sp::runtime::testing
