// The timing binary's stand-in for bench/heap_counter.cpp: no counting allocator (the global
// operator new is the library's), so the heap figures read as 0 and cost nothing.
#include "../heap_counter.h"

namespace sp::bench {

size_t heap_live_bytes() { return 0; }
size_t heap_peak_bytes() { return 0; }
size_t heap_alloc_count() { return 0; }
void heap_reset_peak() {}
size_t process_max_rss_bytes() { return 0; }

}  // namespace sp::bench
