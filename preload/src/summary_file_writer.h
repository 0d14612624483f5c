// Per-rank summary files for processes without the Python package.
//
// In a Python process the package's transport drains the runtime's step summaries and rank 0
// analyses them live. A rank without Python (a C++ trainer under LD_PRELOAD) has no transport, so
// with STRAGGLER_PROBE_OUT_DIR set this writer drains them instead (sp_pop_summary on its own
// thread) into <dir>/rank<R>.spsum for offline analysis, framed as straggler_probe/summary_file.h
// says (records [uint32 little-endian length][summary bytes as sp_pop_summary returns them]).
// At exit it flushes the runtime and drains what is left (bounded wait).
#pragma once

#include <cstdint>
#include <string>

namespace sp::preload {

// Starts the writer once (idempotent); false (with *why) when it does not apply: no directory
// set, a Python interpreter in the process, the runtime absent, or the file cannot be opened.
bool start_summary_file_writer(int32_t rank, std::string* why);

// Summaries written so far.
uint64_t summaries_written();

}  // namespace sp::preload
