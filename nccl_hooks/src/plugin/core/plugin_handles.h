// The profiler plugin's handles and their pools (profiler_plugin_core.h): what NCCL holds between
// startEvent and stopEvent, taken and given back without a lock, and never freed (NCCL's proxy
// thread may name a handle late).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "comm_registry.h"
#include "index_free_list.h"
#include "plugin/core/plugin_op_state.h"
#include "plugin/core/profiler_plugin_core.h"
#include "straggler_probe/probe.h"

namespace sp::nccl::plugin {

constexpr uint64_t kTagContext = 0x5350'4354'5800'0001ull;  // "SPCTX"
constexpr uint32_t kMaxOps = 8192;
constexpr uint32_t kMaxChannels = 32768;
// The timed sweep (plugin_operations.cpp): operations waiting this long for channels that
// never started are given up with CPU times, checked at most once per period.
constexpr uint64_t kSweepAfterNs = 10ull * 1000 * 1000 * 1000;
constexpr uint64_t kSweepPeriodNs = 1000ull * 1000 * 1000;
using ClockFn = uint64_t (*)();

// One per communicator (plugin init); leaked at finalize, since a proxy thread may still hold a
// handle pointing at it.
struct Context {
  uint64_t tag = kTagContext;
  CommInfo* comm = nullptr;  // registry entry keyed by this context (sequence counters)
  int version = 0;
  int rank = -1;
  int nranks = 0;
  uint64_t comm_hash = 0;
  bool hash_known = false;
  bool record = false;
  std::mutex lazy_mutex;  // v1-v3: identity learnt from the first event (once)
};

// Every handle starts with its event type, so stop/record can dispatch on any handle.
struct OpHandle {
  uint64_t type = 0;
  Context* ctx = nullptr;
  sp_coll_type coll = SP_COLL_NONE;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int32_t peer = -1;
  int64_t step_label = -1;
  // Atomic: the sweep reads it while another thread may be reusing the handle.
  std::atomic<uint64_t> cpu_start{0};
  std::atomic<uint64_t> replays{0};      // replays emitted (graph-captured operations)
  std::atomic<int64_t> replay_step{-1};  // the step the current replay began in
  std::atomic<uint64_t> cpu_stop{0};
  uint32_t channels_expected = 0;  // KernelCh events awaited; 0: complete at the op's own stop
  OpState state;                   // channels, stop, retirement (plugin_op_state.h)
  std::atomic<uint64_t> gpu_start{UINT64_MAX};
  std::atomic<uint64_t> gpu_end{0};
  std::atomic<bool> in_use{false};
};

struct ChannelHandle {
  uint64_t type = kProfileKernelCh;
  OpHandle* parent = nullptr;
  uint64_t start = 0;
  uint64_t stop = 0;
};

// Handles that need no state beyond their type (and, for API events, whether the call is being
// captured into a CUDA graph): shared static objects.
struct StatelessHandle {
  uint64_t type;
  bool graph_captured;
};
extern StatelessHandle g_kernel_launch;
extern StatelessHandle g_api_live;      // CollApi / P2pApi of a call that runs now
extern StatelessHandle g_api_captured;  // ... of a call captured into a CUDA graph

class Pools {
 public:
  Pools();
  OpHandle* take_op();       // nullptr (counted) when exhausted
  ChannelHandle* take_channel();
  void give(OpHandle* h);
  void give(ChannelHandle* h);
  // Handles in use, for finalize and the sweep (rare: a scan of the pool).
  template <typename F>
  void for_each_op_in_use(F&& f) {
    for (uint32_t i = 0; i < kMaxOps; ++i) {
      if (ops_[i].in_use.load(std::memory_order_acquire)) f(&ops_[i]);
    }
  }
  bool owns(const OpHandle* h) const { return h >= ops_.get() && h < ops_.get() + kMaxOps; }
  void reset_for_tests();

#define SP_DECLARE(name) std::atomic<uint64_t> name{0};
  SP_PLUGIN_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  std::atomic<uint64_t> next_launch{1};
  // The timed sweep: when it is next due, its settings, and the clock (nullptr: the probe clock;
  // tests set their own).
  std::atomic<uint64_t> next_sweep_ns{0};
  std::atomic<uint64_t> sweep_after_ns{kSweepAfterNs};
  std::atomic<uint64_t> sweep_period_ns{kSweepPeriodNs};
  std::atomic<ClockFn> clock{nullptr};

 private:
  std::unique_ptr<OpHandle[]> ops_;
  std::unique_ptr<ChannelHandle[]> channels_;
  IndexFreeList free_ops_;
  IndexFreeList free_channels_;
};

// The process-wide pools (leaked: proxy threads may report during exit).
Pools& pools();
// The plugin's CPU clock: the probe clock, or the tests' own.
uint64_t now_ns();

}  // namespace sp::nccl::plugin
