#include "plugin/plugin_operations.h"

#include <algorithm>

#include "nccl_emit.h"
#include "nccl_op_names.h"
#include "straggler_probe/gpu/event_sink.h"
#include "straggler_probe/log.h"

namespace sp::nccl::plugin {
namespace {

namespace log = runtime::log;

// %globaltimer is ns since the epoch, kept close to the host clock by the driver. Farther than
// this from the host's view of the operation, it is not trusted (host times are used).
constexpr uint64_t kMaxGpuTimerSkewNs = 10ull * 1000 * 1000 * 1000;
constexpr uint64_t kSweepAfterNs = 10ull * 1000 * 1000 * 1000;
// Tag of the sequence space of a captured operation's replays (comm_registry.h's child_id).
constexpr uint64_t kGraphReplayTag = 0x6772617068ull;  // "graph"

sp_event operation_event(const OpHandle* h) {
  sp_event ev = gpu::blank_event();
  ev.kind = op_kind_of(h->coll);
  ev.coll = h->coll;
  ev.group_id = h->ctx->comm_hash;
  ev.seq = h->seq;
  ev.bytes = h->bytes;
  ev.peer = h->peer;
  ev.group_size = h->ctx->nranks;
  ev.name_id = nccl_event_name(h->coll);
  return ev;
}

// The GPU span of the channels seen, if trustworthy.
bool gpu_span(const OpHandle* h, uint64_t host_reference, uint64_t* start, uint64_t* end) {
  const uint64_t gs = h->gpu_start.load(), ge = h->gpu_end.load();
  if (gs == UINT64_MAX || ge < gs) return false;
  const uint64_t skew = gs > host_reference ? gs - host_reference : host_reference - gs;
  if (skew > kMaxGpuTimerSkewNs) {
    log::warn_once("nccl_gpu_timer_skew",
                   "NCCL kernel timers are far from the host clock; NCCL operations keep host "
                   "times");
    return false;
  }
  *start = gs;
  *end = ge;
  return true;
}

// One replay of a graph-captured operation: its own identity (replay k of this capture, the same
// on every rank), GPU times only (the capture's host times are not an execution).
void emit_replay(OpHandle* h) {
  Pools& p = pools();
  sp_event ev = operation_event(h);
  const uint64_t replay = h->replays.fetch_add(1, std::memory_order_relaxed);
  const uint64_t capture = (h->seq << 8) ^ (static_cast<uint64_t>(h->coll) << 1) ^
                           static_cast<uint64_t>(static_cast<uint32_t>(h->peer + 1)) << 32;
  ev.group_id = CommRegistry::child_id(h->ctx->comm_hash, kGraphReplayTag, capture);
  ev.seq = replay;
  uint64_t start = 0, end = 0;
  const bool timed = gpu_span(h, gpu::probe_now_ns(), &start, &end);
  const int64_t step = h->replay_step.load(std::memory_order_relaxed);
  h->gpu_start.store(UINT64_MAX);
  h->gpu_end.store(0);
  h->replay_channels_started.store(0);
  if (!timed || !h->ctx->record) return;
  ev.start_ns = start;
  ev.end_ns = end;
  ev.time_source = SP_TIME_NCCL;
  gpu::tag_step(ev, step);
  emit_nccl_event(ev);
  p.graph_replays.fetch_add(1, std::memory_order_relaxed);
  p.ops_gpu_timed.fetch_add(1, std::memory_order_relaxed);
}

void maybe_complete(OpHandle* h) {
  // seq_cst: the user thread (op stop) and the proxy thread (last channel stop) each store then
  // load the other's flag; at least one of them must see both.
  if (!h->op_stopped.load()) return;
  if (h->channels_stopped.load() < h->channels_expected) return;
  if (h->graph_captured) {
    // A replay's channels all stopped: emit it and wait for the next replay.
    h->channels_stopped.store(0);
    emit_replay(h);
    return;
  }
  emit_and_free(h, false);
}

void learn_identity(Context* ctx, const EventDesc& d) {
  if (ctx->hash_known || d.comm_hash == 0) return;
  std::lock_guard<std::mutex> lock(ctx->lazy_mutex);  // once per communicator (v1-v3)
  if (ctx->hash_known) return;
  ctx->comm_hash = d.comm_hash;
  if (ctx->comm != nullptr) ctx->comm->group_id = d.comm_hash;
  if (ctx->rank < 0) ctx->rank = d.rank;
  ctx->hash_known = true;
}

uint64_t next_seq(CommInfo* c, const EventDesc& d) {
  if (c == nullptr) return 0;
  if (d.coll == SP_COLL_SEND || d.coll == SP_COLL_RECV) {
    return c->next_p2p_seq(d.coll == SP_COLL_SEND, d.peer);
  }
  return c->next_coll_seq();
}

}  // namespace

void emit_and_free(OpHandle* h, bool swept) {
  if (h->emitted.exchange(true)) return;
  Pools& p = pools();
  sp_event ev = operation_event(h);
  ev.start_ns = h->host_start;
  ev.end_ns = std::max(h->host_start, h->host_stop.load());
  ev.time_source = SP_TIME_HOST;
  uint64_t start = 0, end = 0;
  if (!swept && gpu_span(h, h->host_start, &start, &end)) {
    ev.start_ns = start;
    ev.end_ns = end;
    ev.time_source = SP_TIME_NCCL;
    p.ops_gpu_timed.fetch_add(1, std::memory_order_relaxed);
  }
  gpu::tag_step(ev, h->step_label);
  if (h->ctx->record) emit_nccl_event(ev);
  p.ops_emitted.fetch_add(1, std::memory_order_relaxed);
  if (swept) p.ops_swept.fetch_add(1, std::memory_order_relaxed);
  p.give(h);
}

int start_op(Context* ctx, void** handle, const EventDesc& d) {
  learn_identity(ctx, d);
  Pools& p = pools();
  OpHandle* h = p.take_op();
  if (h == nullptr) {
    *handle = nullptr;  // NCCL skips this operation's later events
    return 0;
  }
  h->type = d.type;
  h->ctx = ctx;
  h->coll = d.coll;
  h->bytes = d.count * d.datatype_size;
  h->peer = (d.coll == SP_COLL_SEND || d.coll == SP_COLL_RECV) ? d.peer : -1;
  h->seq = next_seq(ctx->comm, d);
  h->step_label = gpu::current_step_label();
  h->host_start = gpu::probe_now_ns();
  h->host_stop.store(0);
  // The parent is our CollApi / P2pApi handle (v5+): it says whether the call is captured.
  h->graph_captured = d.parent == &g_api_captured;
  h->replays.store(0);
  h->replay_channels_started.store(0);
  h->replay_step.store(-1);
  // Channels are awaited only when KernelCh events come with timers (v4+); copy-engine
  // collectives (v6) have none.
  h->channels_expected = ctx->version >= 4 && d.type != kProfileCeColl ? d.channels : 0;
  h->channels_stopped.store(0);
  h->gpu_start.store(UINT64_MAX);
  h->gpu_end.store(0);
  h->op_stopped.store(false);
  h->emitted.store(false);
  h->in_use.store(true, std::memory_order_release);
  if (h->graph_captured) p.graph_ops.fetch_add(1, std::memory_order_relaxed);
  const uint64_t started = p.ops_started.fetch_add(1, std::memory_order_relaxed) + 1;
  *handle = h;
  // Now and then, give up on operations whose channels never reported (10 s).
  if (started % 1024 == 0) plugin_sweep(kSweepAfterNs);
  return 0;
}

int start_channel(void** handle, const EventDesc& d) {
  Pools& p = pools();
  *handle = nullptr;
  auto* parent = static_cast<OpHandle*>(d.parent);
  const bool ours = parent != nullptr && p.owns(parent);
  if (!ours || !parent->in_use.load(std::memory_order_acquire) ||
      (parent->type != kProfileColl && parent->type != kProfileP2p)) {
    // A freed handle of ours: a graph replay of an operation captured without our knowing (v4).
    (ours ? p.stale_channels : p.orphan_channels).fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  ChannelHandle* h = p.take_channel();
  if (h == nullptr) return 0;
  h->parent = parent;
  h->start = d.has_gpu_timer ? d.gpu_timer : 0;
  h->stop = 0;
  if (parent->graph_captured && parent->replay_channels_started.fetch_add(1) == 0) {
    parent->replay_step.store(gpu::current_step_label(), std::memory_order_relaxed);
  }
  if (d.has_gpu_timer && d.gpu_timer != 0) {
    uint64_t cur = parent->gpu_start.load();
    while (d.gpu_timer < cur && !parent->gpu_start.compare_exchange_weak(cur, d.gpu_timer)) {
    }
  }
  *handle = h;
  return 0;
}

void stop_op(OpHandle* h) {
  h->host_stop.store(gpu::probe_now_ns());
  h->op_stopped.store(true);
  if (!h->graph_captured) maybe_complete(h);  // a captured one completes at its replays
}

void stop_channel(ChannelHandle* ch) {
  OpHandle* parent = ch->parent;
  if (ch->stop != 0) {
    uint64_t cur = parent->gpu_end.load();
    while (ch->stop > cur && !parent->gpu_end.compare_exchange_weak(cur, ch->stop)) {
    }
  }
  parent->channels_stopped.fetch_add(1);
  pools().give(ch);
  maybe_complete(parent);
}

}  // namespace sp::nccl::plugin
