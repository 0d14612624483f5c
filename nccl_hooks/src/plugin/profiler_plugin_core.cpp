#include "plugin/profiler_plugin_core.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <vector>

#include "preload/activation.h"
#include "comm_registry.h"
#include "interposer/interposer_recorder.h"
#include "nccl_emit.h"
#include "nccl_op_names.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/gpu/event_sink.h"
#include "straggler_probe/log.h"

namespace sp::nccl {

namespace log = runtime::log;
namespace {

constexpr uint64_t kTagContext = 0x5350'4354'5800'0001ull;  // "SPCTX"
constexpr size_t kMaxOps = 8192;
constexpr size_t kMaxChannels = 32768;
// %globaltimer is ns since the epoch, kept close to the host clock by the driver. Farther than
// this from the host's view of the operation, it is not trusted (host times are used).
constexpr uint64_t kMaxGpuTimerSkewNs = 10ull * 1000 * 1000 * 1000;

struct Context {
  uint64_t tag = kTagContext;
  CommInfo* comm = nullptr;  // registry entry keyed by this context (sequence counters)
  int version = 0;
  int rank = -1;
  int nranks = 0;
  uint64_t comm_hash = 0;
  bool hash_known = false;
  bool record = false;
  std::mutex lazy_mutex;  // v1-v3: identity learnt from the first event
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
  uint64_t host_start = 0;
  std::atomic<uint64_t> host_stop{0};
  uint32_t channels_expected = 0;
  std::atomic<uint32_t> channels_stopped{0};
  std::atomic<uint64_t> gpu_start{UINT64_MAX};
  std::atomic<uint64_t> gpu_end{0};
  std::atomic<bool> op_stopped{false};
  std::atomic<bool> emitted{false};
  bool in_use = false;
};

struct ChannelHandle {
  uint64_t type = kProfileKernelCh;
  OpHandle* parent = nullptr;
  uint64_t start = 0;
  uint64_t stop = 0;
  bool in_use = false;
};

// The kernel-launch bracket needs no state beyond its type: one shared object.
struct LaunchHandle {
  uint64_t type = kProfileKernelLaunch;
};
LaunchHandle g_launch_handle;
thread_local uint32_t tl_launch_pushes = 0;

struct Pools {
  std::mutex mutex;
  std::vector<OpHandle*> free_ops;
  std::vector<ChannelHandle*> free_channels;
  std::array<OpHandle, kMaxOps>* ops = nullptr;
  std::array<ChannelHandle, kMaxChannels>* channels = nullptr;
  std::atomic<uint64_t> next_launch{1};
#define SP_DECLARE(name) std::atomic<uint64_t> name{0};
  SP_PLUGIN_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
};

Pools& pools() {
  static Pools* p = [] {
    auto* x = new Pools();  // leaked: proxy threads may report during exit
    x->ops = new std::array<OpHandle, kMaxOps>();
    x->channels = new std::array<ChannelHandle, kMaxChannels>();
    for (auto& h : *x->ops) x->free_ops.push_back(&h);
    for (auto& h : *x->channels) x->free_channels.push_back(&h);
    return x;
  }();
  return *p;
}

// A handle from one of the pools' free lists, nullptr (counted) when the pool is exhausted.
template <typename Handle>
Handle* take_handle(std::vector<Handle*>& free_list) {
  Pools& p = pools();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!free_list.empty()) {
      Handle* h = free_list.back();
      free_list.pop_back();
      return h;
    }
  }
  p.pool_exhausted.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

template <typename Handle>
void return_handle(std::vector<Handle*>& free_list, Handle* h) {
  std::lock_guard<std::mutex> lock(pools().mutex);
  h->in_use = false;
  free_list.push_back(h);
}

void free_op(OpHandle* h) { return_handle(pools().free_ops, h); }

// Emits the operation once (whoever completes it first) and returns the handle to the pool.
void emit_and_free(OpHandle* h, bool swept) {
  if (h->emitted.exchange(true)) return;
  Pools& p = pools();
  sp_event ev = gpu::blank_event();
  ev.kind = op_kind_of(h->coll);
  ev.coll = h->coll;
  ev.group_id = h->ctx->comm_hash;
  ev.seq = h->seq;
  ev.bytes = h->bytes;
  ev.peer = h->peer;
  ev.group_size = h->ctx->nranks;
  ev.name_id = nccl_event_name(h->coll);
  ev.start_ns = h->host_start;
  ev.end_ns = std::max(h->host_start, h->host_stop.load());
  ev.time_source = SP_TIME_HOST;
  const uint64_t gs = h->gpu_start.load(), ge = h->gpu_end.load();
  if (!swept && gs != UINT64_MAX && ge >= gs) {
    const uint64_t host = h->host_start;
    const uint64_t skew = gs > host ? gs - host : host - gs;
    if (skew <= kMaxGpuTimerSkewNs) {
      ev.start_ns = gs;
      ev.end_ns = ge;
      ev.time_source = SP_TIME_NCCL;
      p.ops_gpu_timed.fetch_add(1, std::memory_order_relaxed);
    } else {
      log::warn_once("nccl_gpu_timer_skew",
                     "NCCL kernel timers are far from the host clock; NCCL operations keep host "
                     "times");
    }
  }
  gpu::tag_step(ev, h->step_label);
  if (h->ctx->record) emit_nccl_event(ev);
  p.ops_emitted.fetch_add(1, std::memory_order_relaxed);
  if (swept) p.ops_swept.fetch_add(1, std::memory_order_relaxed);
  free_op(h);
}

void maybe_complete(OpHandle* h) {
  // seq_cst: the user thread (op stop) and the proxy thread (last channel stop) each store then
  // load the other's flag; at least one of them must see both.
  if (!h->op_stopped.load()) return;
  if (h->channels_stopped.load() < h->channels_expected) return;
  emit_and_free(h, false);
}

void learn_identity(Context* ctx, const EventDesc& d) {
  if (ctx->hash_known || d.comm_hash == 0) return;
  std::lock_guard<std::mutex> lock(ctx->lazy_mutex);
  if (ctx->hash_known) return;
  ctx->comm_hash = d.comm_hash;
  if (ctx->comm != nullptr) ctx->comm->group_id = d.comm_hash;
  if (ctx->rank < 0) ctx->rank = d.rank;
  ctx->hash_known = true;
}

int start_op(Context* ctx, void** handle, const EventDesc& d) {
  learn_identity(ctx, d);
  Pools& p = pools();
  OpHandle* h = take_handle(p.free_ops);
  if (h == nullptr) {
    *handle = nullptr;  // NCCL skips this operation's later events
    return 0;
  }
  h->type = d.type;
  h->ctx = ctx;
  h->coll = d.coll;
  h->bytes = d.count * d.datatype_size;
  h->peer = (d.coll == SP_COLL_SEND || d.coll == SP_COLL_RECV) ? d.peer : -1;
  CommInfo* c = ctx->comm;
  if (c == nullptr) {
    h->seq = 0;
  } else if (d.coll == SP_COLL_SEND || d.coll == SP_COLL_RECV) {
    h->seq = c->next_p2p_seq(d.coll == SP_COLL_SEND, d.peer);
  } else {
    h->seq = c->next_coll_seq();
  }
  h->step_label = gpu::current_step_label();
  h->host_start = gpu::probe_now_ns();
  h->host_stop.store(0);
  // Channels are awaited only when KernelCh events come with timers (v4+).
  h->channels_expected = ctx->version >= 4 && d.type != kProfileCeColl ? d.channels : 0;
  h->channels_stopped.store(0);
  h->gpu_start.store(UINT64_MAX);
  h->gpu_end.store(0);
  h->op_stopped.store(false);
  h->emitted.store(false);
  h->in_use = true;
  const uint64_t started = p.ops_started.fetch_add(1, std::memory_order_relaxed) + 1;
  *handle = h;
  // Now and then, give up on operations whose channels never reported (10 s).
  if (started % 1024 == 0) plugin_sweep(10ull * 1000 * 1000 * 1000);
  return 0;
}

int start_channel(void** handle, const EventDesc& d) {
  Pools& p = pools();
  auto* parent = static_cast<OpHandle*>(d.parent);
  const bool parent_ok = parent != nullptr && parent->in_use &&
                         (parent->type == kProfileColl || parent->type == kProfileP2p);
  if (!parent_ok) {
    p.orphan_channels.fetch_add(1, std::memory_order_relaxed);
    *handle = nullptr;
    return 0;
  }
  ChannelHandle* h = take_handle(p.free_channels);
  if (h == nullptr) {
    *handle = nullptr;
    return 0;
  }
  h->parent = parent;
  h->start = d.has_gpu_timer ? d.gpu_timer : 0;
  h->stop = 0;
  h->in_use = true;
  if (d.has_gpu_timer && d.gpu_timer != 0) {
    uint64_t cur = parent->gpu_start.load();
    while (d.gpu_timer < cur && !parent->gpu_start.compare_exchange_weak(cur, d.gpu_timer)) {
    }
  }
  *handle = h;
  return 0;
}

}  // namespace

int plugin_init(void** context, int* activation_mask, const PluginInit& init) {
  const Activation& a = activate();
  auto* ctx = new Context();
  ctx->version = init.version;
  ctx->rank = init.rank;
  ctx->nranks = init.nranks;
  ctx->comm_hash = init.comm_hash;
  ctx->hash_known = init.comm_hash_known;
  ctx->record = a.is_rank && recording_allowed();
  ctx->comm = comm_registry().add(ctx, init.comm_hash, init.rank, init.nranks,
                                  init.comm_hash_known);
  *context = ctx;
  pools().contexts.fetch_add(1, std::memory_order_relaxed);
  if (activation_mask != nullptr) {
    int mask = 0;
    if (ctx->record) {
      mask = kProfileColl | kProfileP2p;
      if (init.version >= 4) mask |= kProfileKernelCh;
      if (init.version >= 5) mask |= kProfileKernelLaunch;
      if (init.version >= 6) mask |= kProfileCeColl;
      // The plugin records NCCL operations: the interposer (if preloaded too) steps aside.
      InterposerRecorder::instance().set_plugin_active(true);
      gpu::CuptiCapture::instance().start();
    }
    // One process-wide mask: never narrow what another communicator's context asked for.
    *activation_mask |= mask;
  }
  log::info("NCCL profiler plugin v" + std::to_string(init.version) + " attached to " +
            (init.comm_name != nullptr ? std::string(init.comm_name) : std::string("a comm")) +
            " (rank " + std::to_string(init.rank) + "/" + std::to_string(init.nranks) + ")");
  return 0;
}

int plugin_start_event(void* context, void** handle, const EventDesc& d) {
  *handle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr || ctx->tag != kTagContext || !ctx->record || in_forked_child()) return 0;
  switch (d.type) {
    case kProfileColl:
    case kProfileP2p:
      return start_op(ctx, handle, d);
    case kProfileCeColl:  // v6: no kernel, no channels; host times around the enqueue
      pools().ce_ops.fetch_add(1, std::memory_order_relaxed);
      return start_op(ctx, handle, d);
    case kProfileKernelCh:
      return start_channel(handle, d);
    case kProfileKernelLaunch: {
      // Tag the NCCL kernel for CUPTI: the launch happens between start and stop, on this thread.
      gpu::CuptiCapture::instance().push_nccl_op(pools().next_launch.fetch_add(1));
      ++tl_launch_pushes;
      *handle = &g_launch_handle;
      return 0;
    }
    default:
      return 0;  // not tracked: a null handle makes NCCL skip its later calls
  }
}

int plugin_record_state(void* handle, int state, uint64_t gpu_timer, bool has_gpu_timer) {
  if (handle == nullptr) return 0;
  const uint64_t type = *static_cast<uint64_t*>(handle);
  if (type == kProfileKernelCh && state == kStateKernelChStop && has_gpu_timer) {
    static_cast<ChannelHandle*>(handle)->stop = gpu_timer;
  }
  return 0;
}

int plugin_stop_event(void* handle) {
  if (handle == nullptr) return 0;
  const uint64_t type = *static_cast<uint64_t*>(handle);
  if (type == kProfileColl || type == kProfileP2p || type == kProfileCeColl) {
    auto* h = static_cast<OpHandle*>(handle);
    h->host_stop.store(gpu::probe_now_ns());
    h->op_stopped.store(true);
    maybe_complete(h);
  } else if (type == kProfileKernelCh) {
    auto* ch = static_cast<ChannelHandle*>(handle);
    OpHandle* parent = ch->parent;
    if (ch->stop != 0) {
      uint64_t cur = parent->gpu_end.load();
      while (ch->stop > cur && !parent->gpu_end.compare_exchange_weak(cur, ch->stop)) {
      }
    }
    parent->channels_stopped.fetch_add(1);
    return_handle(pools().free_channels, ch);
    maybe_complete(parent);
  } else if (type == kProfileKernelLaunch) {
    if (tl_launch_pushes > 0) {
      --tl_launch_pushes;
      gpu::CuptiCapture::instance().pop_nccl_op();
    }
  }
  return 0;
}

int plugin_finalize(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr || ctx->tag != kTagContext) return 0;
  comm_registry().remove(ctx);
  // Operations of this communicator still waiting for channels are emitted now: no more events
  // come for them after finalize.
  Pools& p = pools();
  std::vector<OpHandle*> pending;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (auto& h : *p.ops) {
      if (h.in_use && h.ctx == ctx) pending.push_back(&h);
    }
  }
  for (OpHandle* h : pending) {
    if (h->op_stopped.load()) emit_and_free(h, true);
  }
  ctx->tag = 0;
  // The context itself is leaked: a proxy thread may still hold a handle pointing at it.
  return 0;
}

void plugin_sweep(uint64_t older_than_ns) {
  Pools& p = pools();
  const uint64_t now = gpu::probe_now_ns();
  std::vector<OpHandle*> stale;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    for (auto& h : *p.ops) {
      if (h.in_use && h.op_stopped.load() && now - h.host_start > older_than_ns) {
        stale.push_back(&h);
      }
    }
  }
  for (OpHandle* h : stale) emit_and_free(h, true);
}

PluginStats plugin_stats() {
  Pools& p = pools();
  PluginStats s;
#define SP_LOAD(name) s.name = p.name.load();
  SP_PLUGIN_COUNTERS(SP_LOAD)
#undef SP_LOAD
  return s;
}

void plugin_reset_for_tests() {
  Pools& p = pools();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.free_ops.clear();
  p.free_channels.clear();
  for (auto& h : *p.ops) {
    h.in_use = false;
    h.emitted.store(false);
    p.free_ops.push_back(&h);
  }
  for (auto& h : *p.channels) {
    h.in_use = false;
    p.free_channels.push_back(&h);
  }
#define SP_RESET(name) p.name = 0;
  SP_PLUGIN_COUNTERS(SP_RESET)
#undef SP_RESET
  forget_nccl_event_names_for_tests();
}

}  // namespace sp::nccl
