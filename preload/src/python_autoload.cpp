// Python autoload under LD_PRELOAD (see python_autoload/sitecustomize.py).
//
// The one thing the library does at load time, and only in a Python process started with the
// library preloaded: put <library dir>/straggler_probe_autoload first on PYTHONPATH (and a build tree's python/
// last), which the interpreter reads after this constructor and before the script. No CUDA, no
// threads, no allocation beyond the environment string: nothing that could disturb the process.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "python_presence.h"

namespace {

std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

__attribute__((constructor)) void straggler_probe_python_autoload() {
  const char* opt = std::getenv("STRAGGLER_PROBE_PYTHON_AUTOLOAD");
  if (opt != nullptr && std::strcmp(opt, "0") == 0) return;
  // No RANK / WORLD_SIZE test: launchers differ (Lightning's sets LOCAL_RANK in its children and
  // nothing in its first process). sitecustomize.py starts the probe only in a process that
  // initialises torch.distributed, whose process group then says who it is.
  if (!sp::preload::python_in_process()) return;
  // Loaded into a running interpreter (the package's _core dlopens the library): too late for
  // PYTHONPATH, and setenv would race with other threads' getenv.
  if (sp::preload::python_interpreter_running()) return;
  const std::string dir = own_directory();
  if (dir.empty()) return;
  const std::string autoload = dir + "/straggler_probe_autoload";
  if (access((autoload + "/sitecustomize.py").c_str(), R_OK) != 0) return;
  std::string path = autoload;
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') {
    path += ":";
    path += old;
  }
  // Running from a build tree (build/runtime/libstraggler_probe.so): its package is build/python.
  const std::string tree = dir + "/../python";
  if (access((tree + "/straggler_probe/__init__.py").c_str(), R_OK) == 0) path += ":" + tree;
  setenv("PYTHONPATH", path.c_str(), 1);
}

}  // namespace
