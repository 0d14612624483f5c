#include "plugin/core/plugin_handles.h"

#include "straggler_probe/event_sink.h"

namespace sp::nccl::plugin {

StatelessHandle g_kernel_launch{kProfileKernelLaunch, false};
StatelessHandle g_api_live{kProfileCollApi, false};
StatelessHandle g_api_captured{kProfileCollApi, true};

Pools::Pools()
    : ops_(new OpHandle[kMaxOps]),
      channels_(new ChannelHandle[kMaxChannels]),
      free_ops_(kMaxOps),
      free_channels_(kMaxChannels) {}

OpHandle* Pools::take_op() {
  const uint32_t i = free_ops_.take();
  if (i == IndexFreeList::kNone) {
    pool_exhausted.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return &ops_[i];
}

ChannelHandle* Pools::take_channel() {
  const uint32_t i = free_channels_.take();
  if (i == IndexFreeList::kNone) {
    pool_exhausted.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return &channels_[i];
}

void Pools::give(OpHandle* h) {
  h->in_use.store(false, std::memory_order_release);
  free_ops_.give(static_cast<uint32_t>(h - ops_.get()));
}

void Pools::give(ChannelHandle* h) {
  free_channels_.give(static_cast<uint32_t>(h - channels_.get()));
}

void Pools::reset_for_tests() {
  for (uint32_t i = 0; i < kMaxOps; ++i) ops_[i].in_use.store(false);
  free_ops_.reset();
  free_channels_.reset();
#define SP_RESET(name) name = 0;
  SP_PLUGIN_COUNTERS(SP_RESET)
#undef SP_RESET
  next_sweep_ns = 0;
  sweep_after_ns = kSweepAfterNs;
  sweep_period_ns = kSweepPeriodNs;
  clock = nullptr;
}

Pools& pools() {
  static Pools* p = new Pools();  // leaked: proxy threads may report during exit
  return *p;
}

uint64_t now_ns() {
  const ClockFn clock = pools().clock.load(std::memory_order_relaxed);
  return clock != nullptr ? clock() : gpu::probe_now_ns();
}

}  // namespace sp::nccl::plugin
