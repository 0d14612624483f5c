#include "straggler_probe/gpu/graph_capture.h"

#include <atomic>

namespace sp::gpu {
namespace {

constinit std::atomic<int64_t> g_underway{0};
constinit std::atomic<uint64_t> g_begun{0};

}  // namespace

void graph_capture_begin() {
  g_underway.fetch_add(1, std::memory_order_seq_cst);
  g_begun.fetch_add(1, std::memory_order_relaxed);
}

void graph_capture_end() {
  int64_t n = g_underway.load(std::memory_order_relaxed);
  while (n > 0 && !g_underway.compare_exchange_weak(n, n - 1, std::memory_order_seq_cst)) {
  }
}

bool graph_capture_underway() { return g_underway.load(std::memory_order_seq_cst) > 0; }

uint64_t graph_captures_begun() { return g_begun.load(std::memory_order_relaxed); }

void reset_graph_capture_for_tests() {
  g_underway.store(0);
  g_begun.store(0);
}

}  // namespace sp::gpu
