#include "plugin/core/plugin_operations.h"

#include <algorithm>
#include <string>

#include "nccl_emit.h"
#include "nccl_op_names.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/log.h"

namespace sp::nccl::plugin {
namespace {

namespace log = runtime::log;

// %globaltimer is ns since the epoch, kept close to the CPU clock by the driver. Farther than
// this from the CPU's view of the operation, it is not trusted (CPU times are used).
constexpr uint64_t kMaxGpuTimerSkewNs = 10ull * 1000 * 1000 * 1000;
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
bool gpu_span(const OpHandle* h, uint64_t cpu_reference, uint64_t* start, uint64_t* end) {
  const uint64_t gs = h->gpu_start.load(), ge = h->gpu_end.load();
  if (gs == UINT64_MAX || ge < gs) return false;
  const uint64_t skew = gs > cpu_reference ? gs - cpu_reference : cpu_reference - gs;
  if (skew > kMaxGpuTimerSkewNs) {
    log::warn_once("nccl_gpu_timer_skew",
                   "NCCL kernel timers are far from the CPU clock; NCCL operations keep CPU "
                   "times");
    return false;
  }
  *start = gs;
  *end = ge;
  return true;
}

// One replay of a graph-captured operation: its own identity (replay k of this capture, the same
// on every rank), GPU times only (the capture's CPU times are not an execution).
void emit_replay(OpHandle* h) {
  Pools& p = pools();
  sp_event ev = operation_event(h);
  const uint64_t replay = h->replays.fetch_add(1, std::memory_order_relaxed);
  const uint64_t capture = (h->seq << 8) ^ (static_cast<uint64_t>(h->coll) << 1) ^
                           static_cast<uint64_t>(static_cast<uint32_t>(h->peer + 1)) << 32;
  ev.group_id = CommRegistry::child_id(h->ctx->comm_hash, kGraphReplayTag, capture);
  ev.seq = replay;
  uint64_t start = 0, end = 0;
  const bool timed = gpu_span(h, now_ns(), &start, &end);
  const int64_t step = h->replay_step.load(std::memory_order_relaxed);
  h->gpu_start.store(UINT64_MAX);
  h->gpu_end.store(0);
  if (!timed || !h->ctx->record) return;
  ev.start_ns = start;
  ev.end_ns = end;
  ev.time_source = SP_TIME_NCCL;
  gpu::tag_step(ev, step);
  emit_nccl_event(ev);
  p.graph_replays.fetch_add(1, std::memory_order_relaxed);
  p.ops_gpu_timed.fetch_add(1, std::memory_order_relaxed);
}

// What the thread that delivered an event does with its outcome (plugin_op_state.h).
void finish(OpHandle* h, OpState::Outcome out) {
  switch (out) {
    case OpState::Outcome::kComplete:
      emit_and_free(h, Ending::kCompleted);
      break;
    case OpState::Outcome::kReplay:
      emit_replay(h);
      break;
    case OpState::Outcome::kDrop:
      pools().give(h);
      break;
    case OpState::Outcome::kWait:
      break;
  }
}

// The KernelCh events an operation will get (v4+; profiler_plugin_core.h says why these have
// none whatever nChannels says): NCCL adds no proxy operation, hence no channel event, for a
// send or receive to the rank itself, and a one-rank communicator's collectives are copies.
uint32_t channels_awaited(const Context* ctx, const EventDesc& d) {
  if (ctx->version < 4 || d.type == kProfileCeColl || ctx->nranks == 1) return 0;
  const int self = ctx->rank >= 0 ? ctx->rank : d.rank;
  if (d.type == kProfileP2p && self >= 0 && d.peer == self) return 0;
  return d.channels;
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

void emit_and_free(OpHandle* h, Ending how) {
  Pools& p = pools();
  const bool swept = how == Ending::kSwept;
  sp_event ev = operation_event(h);
  const uint64_t cpu_start = h->cpu_start.load(std::memory_order_relaxed);
  ev.start_ns = cpu_start;
  ev.end_ns = std::max(cpu_start, h->cpu_stop.load());
  ev.time_source = SP_TIME_CPU;
  uint64_t start = 0, end = 0;
  if (!swept && gpu_span(h, cpu_start, &start, &end)) {
    ev.start_ns = start;
    ev.end_ns = end;
    ev.time_source = SP_TIME_NCCL;
    p.ops_gpu_timed.fetch_add(1, std::memory_order_relaxed);
  } else if (!swept && OpState::started(h->state.load()) == 0) {
    p.ops_no_channel.fetch_add(1, std::memory_order_relaxed);
  }
  gpu::tag_step(ev, h->step_label);
  if (h->ctx->record) emit_nccl_event(ev);
  p.ops_emitted.fetch_add(1, std::memory_order_relaxed);
  (swept ? p.ops_swept : p.ops_completed).fetch_add(1, std::memory_order_relaxed);
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
  const uint64_t now = now_ns();
  h->cpu_start.store(now, std::memory_order_relaxed);
  h->cpu_stop.store(0);
  // The parent is our CollApi / P2pApi handle (v5+): it says whether the call is captured.
  const bool captured = d.parent == &g_api_captured;
  h->replays.store(0);
  h->replay_step.store(-1);
  h->channels_expected = channels_awaited(ctx, d);
  h->gpu_start.store(UINT64_MAX);
  h->gpu_end.store(0);
  h->state.begin(captured);  // publishes the fields above to the sweep
  h->in_use.store(true, std::memory_order_release);
  if (captured) p.graph_ops.fetch_add(1, std::memory_order_relaxed);
  p.ops_started.fetch_add(1, std::memory_order_relaxed);
  *handle = h;
  sweep_if_due(now);
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
  // The channel handle first: a channel attached without one would never stop.
  ChannelHandle* h = p.take_channel();
  if (h == nullptr) return 0;
  bool first = false;
  if (!parent->state.attach_channel(&first)) {
    // The operation was given up (swept) or is completing: this channel is not its own.
    p.give(h);
    p.stale_channels.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  h->parent = parent;
  h->start = d.has_gpu_timer ? d.gpu_timer : 0;
  h->stop = 0;
  if (first && OpState::captured(parent->state.load())) {
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
  const uint64_t now = now_ns();
  h->cpu_stop.store(now);
  finish(h, h->state.stop_op(h->channels_expected));  // h may be reused from here on
  sweep_if_due(now);
}

void stop_channel(ChannelHandle* ch) {
  OpHandle* parent = ch->parent;
  if (ch->stop != 0) {
    uint64_t cur = parent->gpu_end.load();
    while (ch->stop > cur && !parent->gpu_end.compare_exchange_weak(cur, ch->stop)) {
    }
  }
  pools().give(ch);
  // The parent stays ours until this detach: no one retires an operation with a channel in flight.
  finish(parent, parent->state.detach_channel(parent->channels_expected));
}

void sweep(uint64_t now, uint64_t older_than_ns) {
  uint64_t swept = 0;
  pools().for_each_op_in_use([&](OpHandle* h) {
    const uint64_t s = h->state.load();
    if (OpState::captured(s) || !OpState::idle(s)) return;  // replays come; or channels run
    const uint64_t start = h->cpu_start.load(std::memory_order_relaxed);
    if (now <= start || now - start <= older_than_ns) return;  // young (or the clock went back)
    if (!h->state.retire_if_idle(s)) return;  // something arrived, or the handle was reused
    emit_and_free(h, Ending::kSwept);
    ++swept;
  });
  if (swept == 0) return;
  log::warn_once("nccl_plugin_swept",
                 "NCCL profiler plugin: " + std::to_string(swept) +
                     " operation(s) got no channel (KernelCh) events within " +
                     std::to_string(older_than_ns / 1000000) +
                     " ms of their enqueue; recorded with CPU times (plugin_ops_swept counts "
                     "them; said once)");
}

void sweep_if_due(uint64_t now) {
  Pools& p = pools();
  uint64_t due = p.next_sweep_ns.load(std::memory_order_relaxed);
  const uint64_t period = p.sweep_period_ns.load(std::memory_order_relaxed);
  // Not due yet, unless the clock went back by more than a period.
  if (now < due && due - now <= period) return;
  // One thread sweeps; the others go on at once.
  if (!p.next_sweep_ns.compare_exchange_strong(due, now + period, std::memory_order_relaxed)) {
    return;
  }
  sweep(now, p.sweep_after_ns.load(std::memory_order_relaxed));
}

void finalize_ops(const Context* ctx) {
  uint64_t given_up = 0;
  pools().for_each_op_in_use([&](OpHandle* h) {
    if (h->ctx != ctx) return;
    const uint64_t s = h->state.load();
    // One with a channel in flight is left to that channel's stop (a retired handle must see no
    // more events); one NCCL never stopped is still NCCL's.
    if (!h->state.retire_if_idle(s)) return;
    if (OpState::captured(s)) {
      pools().give(h);
    } else {
      emit_and_free(h, Ending::kSwept);
      ++given_up;
    }
  });
  if (given_up == 0) return;
  log::warn_once("nccl_plugin_finalize_open",
                 "NCCL profiler plugin: " + std::to_string(given_up) +
                     " operation(s) still waited for channel (KernelCh) events when their "
                     "communicator ended; recorded with CPU times (plugin_ops_swept counts "
                     "them; said once)");
}

}  // namespace sp::nccl::plugin
