// Heap accounting for the benchmarks: heap_counter.cpp replaces the global operator new/delete
// of the benchmark executable (only there) to track live and peak bytes, so the peak memory of
// one phase can be read without a separate process.
#pragma once

#include <cstddef>

namespace sp::bench {

size_t heap_live_bytes();
size_t heap_peak_bytes();
// Calls of operator new so far.
size_t heap_alloc_count();
// Starts a new peak measurement from the current live size.
void heap_reset_peak();

// Peak resident set size of the process so far (getrusage), bytes.
size_t process_max_rss_bytes();

}  // namespace sp::bench
