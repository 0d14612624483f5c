#include "interposer/interposer_recorder.h"

#include <cstdlib>
#include <cstring>

#include "interposer/cuda_runtime_api.h"
#include "interposer/real_nccl.h"
#include "nccl_emit.h"
#include "nccl_op_names.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/capture_hooks.h"
#include "straggler_probe/log.h"
#include "straggler_probe/preload/activation.h"

namespace sp::nccl {

namespace log = runtime::log;
namespace {

// Per-thread state: NCCL's own group depth is per thread, and so is ours.
struct ThreadState {
  uint32_t nesting = 0;      // interposed calls on the stack (NCCL calling its own API)
  uint32_t group_depth = 0;
  GroupSummary group;
  uint64_t group_start_ns = 0;
  int64_t group_step_label = -1;
};
thread_local ThreadState tl;

uint32_t stream_id(void* stream) {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(stream) >> 4) & 0xffffffffu);
}

}  // namespace

InterposerRecorder& InterposerRecorder::instance() {
  static InterposerRecorder* i = new InterposerRecorder();  // leaked: NCCL may be called during exit
  return *i;
}

uint64_t InterposerRecorder::group_id_of(const ncclUniqueId& id) {
  return CommRegistry::id_from_unique_id(id.internal, sizeof(id.internal));
}

bool InterposerRecorder::should_record() {
  preload::activate();
  if (!preload::recording_allowed() || plugin_active_.load(std::memory_order_relaxed)) return false;
  if (disabled_by_env_.load(std::memory_order_relaxed)) return false;
  return tl.nesting == 0;
}

void InterposerRecorder::ensure_timer() {
  if (timer_checked_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(timer_mutex_);
  if (timer_checked_.load()) return;
  if (const char* off = std::getenv("STRAGGLER_PROBE_NCCL_INTERPOSE"); off && off[0] == '0') {
    disabled_by_env_.store(true);
  }
  const char* max_connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  CudaRt rt;
  if (const char* why = why_no_stream_timing(std::getenv("STRAGGLER_PROBE_NCCL_TIMING"),
                                             max_connections)) {
    if (max_connections != nullptr && std::strcmp(max_connections, "1") == 0) {
      log::warn_once("nccl_single_connection", why);  // said once: the user should know
    } else {
      log::info(why);
    }
  } else if (load_resident_cudart(&rt)) {
    auto t = std::make_unique<StreamTimer>(rt, StreamTimerOptions{});
    if (t->start()) {
      timer_ = std::move(t);
      timer_fast_.store(timer_.get(), std::memory_order_release);
    } else {
      log::warn_once("cuda_timer_unavailable",
                     "CUDA events unavailable (no driver/device?): NCCL operations are timed on "
                     "the CPU");
    }
  } else {
    log::info("no CUDA runtime in the process: NCCL operations timed on the CPU");
  }
  timer_checked_.store(true, std::memory_order_release);
}

CommInfo* InterposerRecorder::lookup_comm(ncclComm_t comm) {
  CommRegistry& reg = comm_registry();
  if (CommInfo* c = reg.find(comm)) return c;
  // A communicator created before we could see it: rank and size from NCCL, no cross-rank
  // identity (group_id 0).
  int rank = -1, size = 0;
  const RealNccl& real = real_nccl();
  if (real.CommUserRank != nullptr) real.CommUserRank(comm, &rank);
  if (real.CommCount != nullptr) real.CommCount(comm, &size);
  return reg.find_or_add(comm, 0, rank, size, false);
}

InterposerRecorder::Call InterposerRecorder::begin_op(sp_coll_type coll, ncclComm_t comm,
                                                      size_t count, ncclDataType_t dt, int peer,
                                                      int root, cudaStream_t stream) {
  NcclOp op;
  op.coll = coll;
  op.bytes = static_cast<uint64_t>(count) * datatype_size(dt);
  op.peer = peer;
  op.root = root;
  op.stream = stream;
  return begin(op, comm);
}

InterposerRecorder::Call InterposerRecorder::begin_one_sided(sp_coll_type coll, ncclComm_t comm,
                                                             uint64_t bytes, int peer,
                                                             uint32_t signals,
                                                             cudaStream_t stream) {
  NcclOp op;
  op.coll = coll;
  op.bytes = bytes;
  op.peer = peer;
  op.stream = stream;
  op.one_sided = true;
  op.signals = signals;
  return begin(op, comm);
}

InterposerRecorder::Call InterposerRecorder::begin(NcclOp op, ncclComm_t comm) {
  Call call;
  const bool record = should_record();
  ++tl.nesting;
  if (!record) {
    counters_.passthrough.fetch_add(1, std::memory_order_relaxed);
    return call;
  }
  ensure_timer();
  StreamTimer* timer = timer_fast_.load(std::memory_order_acquire);
  if (timer != nullptr && timer->capturing(op.stream)) {
    counters_.graph_captured.fetch_add(1, std::memory_order_relaxed);
    log::warn_once("nccl_graph_capture",
                   "NCCL operations captured into a CUDA graph replay without passing through the "
                   "NCCL API: the interposer does not see the replays (CUPTI kernel records and "
                   "the NCCL profiler plugin do)");
    return call;
  }
  call.op = op;
  call.op.comm = lookup_comm(comm);
  if (tl.group_depth > 0) {
    call.in_group = true;  // folded into the group; recorded at the outermost ncclGroupEnd
    return call;
  }
  call.record = true;
  call.step_label = gpu::current_step_label();
  call.op_id = next_op_id_.fetch_add(1, std::memory_order_relaxed);
  gpu::tag_nccl_op(call.op_id);
  call.cpu_start = gpu::probe_now_ns();
  if (timer != nullptr) call.timing = timer->begin(op.stream);
  return call;
}

void InterposerRecorder::end_op(Call& call, ncclResult_t result) {
  --tl.nesting;
  if (call.in_group) {
    if (result == ncclSuccess || result == ncclInProgress) tl.group.add(call.op);
    return;
  }
  if (!call.record) return;
  gpu::untag_nccl_op();
  finish(identify_single(call.op), call, result);
}

void InterposerRecorder::group_start_done(ncclResult_t result) {
  if (result != ncclSuccess) return;
  if (tl.group_depth++ == 0) {
    tl.group.reset();
    tl.group_start_ns = gpu::probe_now_ns();
    tl.group_step_label = gpu::current_step_label();
  }
}

InterposerRecorder::Call InterposerRecorder::begin_group_end() {
  Call call;
  ++tl.nesting;
  if (tl.group_depth != 1 || tl.group.count() == 0) return call;  // inner end, or empty group
  call.group_end = true;
  call.record = true;
  call.cpu_start = tl.group_start_ns;
  call.step_label = tl.group_step_label;
  call.op_id = next_op_id_.fetch_add(1, std::memory_order_relaxed);
  gpu::tag_nccl_op(call.op_id);
  // The group's kernel is launched inside this ncclGroupEnd, on the first operation's stream
  // (NCCL joins the other streams to it with events): bracket the launch there.
  call.op.stream = static_cast<cudaStream_t>(tl.group.first_stream());
  if (StreamTimer* timer = timer_fast_.load(std::memory_order_acquire)) {
    call.timing = timer->begin(call.op.stream);
  }
  return call;
}

void InterposerRecorder::end_group_end(Call& call, ncclResult_t result) {
  --tl.nesting;
  if (tl.group_depth > 0) --tl.group_depth;
  if (!call.group_end) return;
  gpu::untag_nccl_op();
  OpIdentity id = tl.group.finish();
  tl.group.reset();
  counters_.folded_groups.fetch_add(id.folded_group ? 1 : 0, std::memory_order_relaxed);
  finish(id, call, result);
}

void InterposerRecorder::finish(const OpIdentity& id, Call& call, ncclResult_t result) {
  StreamTimer* timer = timer_fast_.load(std::memory_order_acquire);
  if (result != ncclSuccess && result != ncclInProgress) {
    counters_.failed_calls.fetch_add(1, std::memory_order_relaxed);
    if (timer != nullptr) timer->cancel(call.timing);
    return;
  }
  sp_event ev = gpu::blank_event();
  ev.start_ns = call.cpu_start;
  ev.end_ns = gpu::probe_now_ns();
  ev.kind = id.kind;
  ev.coll = id.coll;
  ev.group_id = id.group_id;
  ev.seq = id.seq;
  ev.bytes = id.bytes;
  ev.peer = id.peer;
  ev.group_size = id.group_size;
  ev.stream = stream_id(id.stream);
  ev.name_id = id.one_sided ? nccl_one_sided_name(id.coll, id.bytes)
                            : nccl_event_name(id.coll, id.folded_group && id.coll == SP_COLL_NONE);
  ev.time_source = SP_TIME_CPU;

  if (result == ncclInProgress) {
    counters_.in_progress.fetch_add(1, std::memory_order_relaxed);
    log::info("non-blocking communicator: its operations are timed on the CPU");
    if (timer != nullptr) timer->cancel(call.timing);
    call.timing = nullptr;
  }
  // The end event right after the call, on the calling thread: stream order.
  if (call.timing != nullptr && !timer->record_end(call.timing, id.stream)) call.timing = nullptr;
  counters_.recorded.fetch_add(1, std::memory_order_relaxed);
  FinishedOp op{ev, call.step_label, call.timing};
  if (!finished_->try_push(op)) {
    counters_.out_of_order.fetch_add(1, std::memory_order_relaxed);
    gpu::tag_step(op.ev, op.launch_step);
    if (op.timing != nullptr) {
      timer->submit(op.timing, op.ev);
    } else {
      emit_nccl_event(op.ev);
    }
    return;
  }
  drain_finished();
}

void InterposerRecorder::drain_finished() {
  for (;;) {
    // The push before this, and the release below before the last look: at least one of two
    // racing threads sees the other's operation, so none is left in the queue.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (draining_.exchange(true, std::memory_order_acquire)) return;  // another thread drains
    FinishedOp op{};
    while (finished_->try_pop(&op)) deliver(op);
    draining_.store(false, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!finished_->ready()) return;
  }
}

void InterposerRecorder::deliver(FinishedOp& op) {
  sp_event& ev = op.ev;
  // Step detection on the queue order of operations, before the event is tagged with its step.
  // While the detector is the only source of marks, the current step is the number of marks it
  // made; otherwise an operation belongs to the step it was launched in.
  preload::StepDetector::Boundary boundary = preload::StepDetector::Boundary::kNone;
  int64_t label = op.launch_step;
  if (!detector_) detector_ = std::make_unique<preload::StepDetector>(preload::activate().marker);
  const int64_t current = gpu::current_step_label();
  bool stood_down_now = false;
  if (own_marks_.sole_producer(current, &stood_down_now)) {
    label = current;
    boundary = detector_->on_op(static_cast<sp_coll_type>(ev.coll), ev.group_id, ev.bytes,
                                ev.start_ns, ev.end_ns);
    if (boundary == preload::StepDetector::Boundary::kBefore && label >= 0) {
      own_marks_.mark(label);
      ++label;  // this operation opens the next step
    }
  } else if (stood_down_now) {
    log::info("steps are marked by the application: automatic step detection off");
  }
  gpu::tag_step(ev, label);
  StreamTimer* timer = timer_fast_.load(std::memory_order_acquire);
  if (timer != nullptr && op.timing != nullptr) {
    timer->submit(op.timing, ev);
  } else {
    emit_nccl_event(ev);
  }
  if (boundary == preload::StepDetector::Boundary::kAfter && label >= 0) own_marks_.mark(label);
  if (boundary != preload::StepDetector::Boundary::kNone) {
    counters_.steps_marked.fetch_add(1, std::memory_order_relaxed);
    gpu::capture_request_flush();  // step end: GPU records off the hot path
  }
}

void InterposerRecorder::comm_created(ncclComm_t comm, uint64_t group_id, int rank, int size,
                              bool known) {
  if (comm == nullptr) return;
  comm_registry().add(comm, group_id, rank, size, known);
  if (preload::recording_allowed()) gpu::capture_start();  // CUDA surely loaded now
}

void InterposerRecorder::comm_split(ncclComm_t parent, ncclComm_t child, uint64_t tag) {
  if (child == nullptr) return;
  CommInfo* p = comm_registry().find(parent);
  const uint64_t parent_id = p != nullptr ? p->group_id : 0;
  const uint64_t counter = p != nullptr ? p->children.fetch_add(1) : 0;
  int rank = -1, size = 0;
  const RealNccl& real = real_nccl();
  // Non-blocking children may still be initialising: then rank/size stay unknown until an
  // operation looks them up again.
  if (real.CommUserRank != nullptr && real.CommUserRank(child, &rank) != ncclSuccess) rank = -1;
  if (real.CommCount != nullptr && real.CommCount(child, &size) != ncclSuccess) size = 0;
  const bool known = p != nullptr && p->identity_known;
  comm_created(child, known ? CommRegistry::child_id(parent_id, tag, counter) : 0, rank, size,
               known);
}

void InterposerRecorder::comm_destroyed(ncclComm_t comm) { comm_registry().remove(comm); }

InterposerStats InterposerRecorder::stats() const {
  InterposerStats s;
#define SP_LOAD(name) s.name = counters_.name.load();
  SP_INTERPOSER_COUNTERS(SP_LOAD)
#undef SP_LOAD
  if (StreamTimer* t = timer_fast_.load()) {
    const StreamTimerStats ts = t->stats();
    s.cuda_event_timed = ts.timed;
    s.cuda_event_fallbacks = ts.untimed_full + ts.record_failures;
  }
  return s;
}

void InterposerRecorder::reset_for_tests() {
  detector_.reset();
  own_marks_ = preload::OwnStepMarks();
  forget_nccl_event_names_for_tests();
#define SP_RESET(name) counters_.name = 0;
  SP_INTERPOSER_COUNTERS(SP_RESET)
#undef SP_RESET
  plugin_active_.store(false);
  tl = ThreadState();
}

void InterposerRecorder::set_timer_for_tests(std::unique_ptr<StreamTimer> timer) {
  std::lock_guard<std::mutex> lock(timer_mutex_);
  timer_fast_.store(timer.get());
  timer_ = std::move(timer);
  timer_checked_.store(true);
}

}  // namespace sp::nccl
