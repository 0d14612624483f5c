// The command's heap settings (process_memory.h). Measured on SE's trace (bench/README.md):
// keeping freed memory saves 10-20% of analyze's CPU time; one arena and huge pages at the top
// of the heap turn its ~5,900 page faults into a few hundred, about 20% less again.
#include "process_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if __has_include(<malloc.h>) && __has_include(<sys/mman.h>) && __has_include(<unistd.h>)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace sp::cli {
namespace {

// Below glibc's mmap threshold as set here, so that the reserve (and what is later carved
// from it) lies in the brk heap rather than in a mapping of its own that free() would unmap.
constexpr size_t kMaxReserve = size_t{240} << 20;
constexpr size_t kMmapThreshold = size_t{256} << 20;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

}  // namespace

void keep_freed_memory() {
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD) && defined(M_ARENA_MAX)  // glibc
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold));
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 1);
#endif
}

void reserve_heap_for_trace(size_t trace_bytes) {
#if defined(M_MMAP_THRESHOLD) && defined(MADV_HUGEPAGE)
  // The peak heap is about 10x a gzip'd trace's size (SE: 2.2 MB -> 25 MB; 4096 GPUs: 37 MB ->
  // 320 MB), 3x a plain CSV's; over-reserving costs only address space.
  const size_t want = std::min(kMaxReserve, std::max(trace_bytes, size_t{1} << 20) * 12);
  void* block = std::malloc(want);
  if (!block) return;
  // The aligned part of the block up to the heap's end: later growth of the heap beyond it
  // gets ordinary pages. The trim threshold keeps the range in the heap once freed.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a refusal is harmless
  std::free(block);
#else
  (void)trace_bytes;
#endif
}

}  // namespace sp::cli
