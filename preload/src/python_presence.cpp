#include "python_presence.h"

#include <dlfcn.h>

namespace sp::preload {
namespace {

using IsInitialized = int (*)();

IsInitialized is_initialized_fn() {
  return reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
}

}  // namespace

bool python_in_process() { return is_initialized_fn() != nullptr; }

bool python_interpreter_running() {
  IsInitialized fn = is_initialized_fn();
  return fn != nullptr && fn() != 0;
}

}  // namespace sp::preload
