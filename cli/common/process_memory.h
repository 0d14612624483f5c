// How the command's process uses the C heap. `analyze` is a short batch job that allocates
// and frees large buffers phase after phase (inflated text, trace table, replays, timeline
// layout); these settings make that cheap. glibc only: elsewhere they do nothing.
#pragma once

#include <cstddef>

namespace sp::cli {

// Keep freed memory in the heap for reuse instead of handing each large buffer back to the
// kernel and faulting the next one in, and let every thread allocate from that one heap (a
// thread's own arena would fault in fresh pages beside it). Call before any thread starts.
void keep_freed_memory();

// Reserves about what analysing a trace file of `trace_bytes` needs at the top of the heap and
// asks for transparent huge pages there (where the kernel grants them on request), so that
// the buffers carved from it are faulted in 2 MiB at a time. Virtual space only: nothing is
// touched. Does nothing where it cannot.
void reserve_heap_for_trace(size_t trace_bytes);

}  // namespace sp::cli
