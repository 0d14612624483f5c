// Counting replacements of the global operator new/delete (see heap_counter.h). The size of a
// block comes from malloc_usable_size, so no header is added and sized delete needs no trust.
// The aligned forms are left to the library: they pair with their own deletes and the engine
// does not use over-aligned types.
#include "heap_counter.h"

#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};
std::atomic<size_t> g_allocs{0};

void* counted_alloc(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) return nullptr;
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  const size_t live = g_live.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) +
                      malloc_usable_size(p);
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}

void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(size_t n) {
  void* p = counted_alloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) {
  void* p = counted_alloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace sp::bench {

size_t heap_live_bytes() { return g_live.load(std::memory_order_relaxed); }
size_t heap_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
size_t heap_alloc_count() { return g_allocs.load(std::memory_order_relaxed); }
void heap_reset_peak() { g_peak.store(g_live.load(std::memory_order_relaxed)); }

size_t process_max_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace sp::bench
