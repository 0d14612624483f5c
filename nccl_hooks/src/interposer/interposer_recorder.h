// The recording side of the nccl* interposer (the entry points themselves are in
// nccl_entry_points.cpp): per-call bookkeeping, group folding, timing and step detection.
//
// A call is recorded when this process is a rank, the NCCL profiler plugin is not active (it
// records the same operations better), the call is not nested inside another interposed call, and
// its stream is not being captured into a CUDA graph. Captured collectives replay without passing
// through the NCCL API, so the interposer cannot see replays (said once in the log); CUPTI kernel
// records and the profiler plugin still do.
//
// No lock is taken per operation: finished operations go through a lock-free queue (see
// FinishedOp below) so that the step detector sees all threads' operations in one order.
//
// Inside ncclGroupStart/End nothing is recorded per call: the group is folded into ONE operation
// at the outermost ncclGroupEnd (nccl_op.h), timed around that ncclGroupEnd, which is where NCCL
// launches the group's kernel. Non-blocking communicators may return ncclInProgress and launch
// later, so their operations get CPU times.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "interposer/nccl_op.h"
#include "interposer/stream_timer.h"
#include "nccl_types.h"
#include "straggler_probe/mpsc_queue.h"
#include "straggler_probe/preload/own_step_marks.h"
#include "straggler_probe/preload/step_detector.h"

namespace sp::nccl {

// The recorder's own counters: one list for the stats struct, the atomics, their read and reset.
//   passthrough: not recorded (not a rank, plugin active, nested, disabled); failed_calls: NCCL
//   returned an error (nothing recorded); graph_captured: skipped, the stream was capturing into
//   a CUDA graph; in_progress: non-blocking communicator, CPU-timed
//   out_of_order: the finished-operation queue was full (thousands behind the draining thread):
//   emitted at once, without step detection
#define SP_INTERPOSER_COUNTERS(X) \
  X(recorded) X(folded_groups) X(passthrough) X(failed_calls) X(graph_captured) X(in_progress) \
  X(steps_marked) X(out_of_order)

struct InterposerStats {
#define SP_DECLARE(name) uint64_t name = 0;
  SP_INTERPOSER_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  uint64_t cuda_event_timed = 0;      // GPU-timed through the stream timer
  uint64_t cuda_event_fallbacks = 0;  // timer present, timing not possible: CPU times
};

class InterposerRecorder {
 public:
  static InterposerRecorder& instance();

  // What one interposed call carries from before the real call to after it.
  struct Call {
    bool record = false;       // record this call on return
    bool in_group = false;     // folded into the current group instead
    bool group_end = false;    // the outermost ncclGroupEnd
    NcclOp op;
    uint64_t cpu_start = 0;
    uint64_t op_id = 0;
    int64_t step_label = -1;
    StreamTimer::Pending* timing = nullptr;
  };

  // An operation (collective or p2p) on `comm`.
  Call begin_op(sp_coll_type coll, ncclComm_t comm, size_t count, ncclDataType_t dt, int peer,
                int root, cudaStream_t stream);
  // A one-sided operation (NCCL 2.29): SEND (ncclPutSignal, ncclSignal) or RECV (ncclWaitSignal
  // for `signals` signals from `peer`, -1 for several peers); nccl_op.h numbers them.
  Call begin_one_sided(sp_coll_type coll, ncclComm_t comm, uint64_t bytes, int peer,
                       uint32_t signals, cudaStream_t stream);
  void end_op(Call& call, ncclResult_t result);

  void group_start_done(ncclResult_t result);  // after the real ncclGroupStart
  Call begin_group_end();
  void end_group_end(Call& call, ncclResult_t result);

  // Communicator lifecycle.
  void comm_created(ncclComm_t comm, uint64_t group_id, int rank, int size, bool known);
  void comm_split(ncclComm_t parent, ncclComm_t child, uint64_t tag);
  void comm_destroyed(ncclComm_t comm);
  // Identity of a ncclUniqueId-created communicator (NCCL's commHash construction).
  static uint64_t group_id_of(const ncclUniqueId& id);

  // The NCCL profiler plugin took over recording (or gave it back).
  void set_plugin_active(bool active) { plugin_active_.store(active); }
  bool plugin_active() const { return plugin_active_.load(); }

  InterposerStats stats() const;

  // Tests: forget timing/step state and counters (entries in the registry stay).
  void reset_for_tests();
  // Tests: use this timer (nullptr: CPU times).
  void set_timer_for_tests(std::unique_ptr<StreamTimer> timer);

 private:
  InterposerRecorder() = default;
  bool should_record();
  void ensure_timer();
  CommInfo* lookup_comm(ncclComm_t comm);
  Call begin(NcclOp op, ncclComm_t comm);
  void finish(const OpIdentity& id, Call& call, ncclResult_t result);

  std::atomic<bool> plugin_active_{false};
  std::atomic<bool> disabled_by_env_{false};
  std::atomic<uint64_t> next_op_id_{1};

  std::mutex timer_mutex_;
  std::atomic<bool> timer_checked_{false};
  std::unique_ptr<StreamTimer> timer_;
  std::atomic<StreamTimer*> timer_fast_{nullptr};

  // Finished operations of all threads, in one order: each thread pushes its own (lock-free) and
  // then whichever thread finds no one else draining drains the queue (combining), running the
  // step detector, tagging and emitting in queue order. No thread ever waits for another; in
  // the usual one-thread case the caller drains its own operation at once.
  struct FinishedOp {
    sp_event ev;                  // CPU times, not yet tagged with its step
    int64_t launch_step = -1;     // the runtime's step label when the operation was launched
    StreamTimer::Pending* timing; // end recorded on the stream; nullptr: CPU times
  };
  static constexpr size_t kFinishedQueue = 4096;
  void drain_finished();
  void deliver(FinishedOp& op);
  std::unique_ptr<runtime::BoundedMpscQueue<FinishedOp, kFinishedQueue>> finished_ =
      std::make_unique<runtime::BoundedMpscQueue<FinishedOp, kFinishedQueue>>();
  std::atomic<bool> draining_{false};
  // Touched only by the draining thread.
  std::unique_ptr<preload::StepDetector> detector_;
  preload::OwnStepMarks own_marks_;  // the detector stands down when someone else marks steps


  struct Counters {
#define SP_DECLARE(name) std::atomic<uint64_t> name{0};
    SP_INTERPOSER_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  } counters_;
};

}  // namespace sp::nccl
