// Whether the process hosting the library runs Python, and whether its interpreter already runs.
//
// Three native parts decide by this: the summary-file writer (a Python process's package owns
// the summaries), the Python autoload and the NVTX registration (both change the environment,
// which is only safe before the interpreter starts threads that read it).
#pragma once

namespace sp::preload {

// A Python interpreter is linked into this process (it exports its C API from the executable or
// libpython).
bool python_in_process();

// The interpreter is initialised: the library was dlopened from Python (the package's _core),
// not preloaded into it.
bool python_interpreter_running();

}  // namespace sp::preload
