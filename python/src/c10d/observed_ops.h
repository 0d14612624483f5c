// The state the C++ process-group hooks (group_observer.h) share with the callbacks on their ops'
// futures and with the training thread's looks: one group's Observer, and the table of ops
// issued and not yet known to have ended. Built only against a torch with ProcessGroup pre/post
// hooks (SP_C10D_GROUP_HOOKS).
#pragma once

#ifdef SP_C10D_GROUP_HOOKS

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <Python.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "probe_clock.h"
#include "straggler_probe/probe.h"

namespace sp::pyext::observed {

inline constexpr size_t kOpSlots = 256;  // HookOpName is a uint8_t
// A futureless op nobody waited for in Python is ended at the step boundary this many steps
// after its issue (hooks/open_works.py's UNWAITED_STEPS: the same rule for the same works).
inline constexpr int64_t kUnwaitedSteps = 2;

enum class Route : uint8_t { kCountOnly, kNative, kPython };

struct OpKind {
  uint32_t kind = 0;
  uint32_t coll = 0;
  uint32_t name_id = 0;
  Route route = Route::kCountOnly;
};

// One issued collective, complete but for its end.
struct IssuedOp {
  int64_t start_ns = 0;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  uint32_t kind = 0;
  uint32_t coll = 0;
  uint32_t name_id = 0;
  uint32_t stream = 0;
};

struct Observer {
  int (*record)(const sp_event*) = nullptr;
  uint64_t group_id = 0;
  int32_t group_size = 0;
  unsigned long train_thread = 0;
  uint32_t stream_main = 0;
  uint32_t stream_async = 0;
  std::array<OpKind, kOpSlots> kinds{};

  std::atomic<bool> active{false};
  std::atomic<uint64_t> coll_seq{0};
  std::atomic<uint64_t> seen{0};
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> future_ends{0};
  std::atomic<uint64_t> seen_ends{0};
  std::atomic<uint64_t> waited_ends{0};
  std::atomic<uint64_t> ended_unwaited{0};
  std::atomic<uint64_t> dropped{0};

  // Sends and receives go to Python (hooks/process_group.py). Touched only with the GIL held:
  // set at construction, cleared by detach(), so a hook firing on another thread after that
  // finds them null.
  PyObject* p2p_pre = nullptr;
  PyObject* p2p_post = nullptr;

  std::mutex failure_mu;
  std::string failure;  // the first error, for Python to report once

  void fail(const std::string& what) {
    const std::lock_guard<std::mutex> lock(failure_mu);
    if (failure.empty()) failure = what;
  }

  void record_end(const IssuedOp& op, int64_t end_ns) {
    sp_event ev{};
    ev.start_ns = static_cast<uint64_t>(op.start_ns);
    ev.end_ns = static_cast<uint64_t>(std::max(end_ns, op.start_ns));
    ev.group_id = group_id;
    ev.seq = op.seq;
    ev.bytes = op.bytes;
    ev.kind = op.kind;
    ev.coll = op.coll;
    ev.microbatch = -1;
    ev.peer = -1;
    ev.group_size = group_size;
    ev.stream = op.stream;
    ev.name_id = op.name_id;
    ev.time_source = SP_TIME_CPU;
    record(&ev);  // its status: dropped or paused events are the runtime's to count
  }
};

// Ops issued and not yet known to have ended, for the training thread's looks (sweep, settle,
// work_waited). An op ends once: the first of its future's callback (the backend's thread, which
// never touches this table, only the op's flag), a look by the training thread that finds it
// complete (c10's Future wakes its waiters before it runs its callbacks, and DDP waits on a
// future chained behind ours: the training thread may resume before our callback has run, and
// then the op ended no later than that look), a Python wait() on it returning, or a step boundary
// kUnwaitedSteps after its issue (futureless works nobody waited for: the table stays bounded).
struct OpenOp {
  std::shared_ptr<Observer> owner;
  const c10d::Work* key = nullptr;      // which work, for work_waited (never dereferenced)
  c10::intrusive_ptr<c10d::Work> work;  // futureless ops only (their is_completed): a futured
                                        // one's callback holds this op, and the work holds it
  c10::weak_intrusive_ptr<c10::ivalue::Future> future{c10::intrusive_ptr<c10::ivalue::Future>()};
  IssuedOp op;
  int64_t issued_step = 0;
  std::atomic<bool> ended{false};

  // Records the op ending at end_ns unless it has ended already.
  void end(int64_t end_ns, std::atomic<uint64_t> Observer::*counter) {
    if (ended.exchange(true, std::memory_order_acq_rel)) return;
    if (!owner->active.load(std::memory_order_acquire)) return;
    ((*owner).*counter).fetch_add(1, std::memory_order_relaxed);
    owner->record_end(op, end_ns);
  }
};

// Adds an issued op to the table (the post-hook, on the issuing thread).
void track(std::shared_ptr<OpenOp> op);
// Ends the open ops complete by now (a futured op when its future is; a futureless one, with
// `futureless_too`, when its work says so) and, when step >= 0, those issued kUnwaitedSteps
// steps before it (given up); drops the ended ones from the table.
void sweep(bool futureless_too, int64_t step);
// A Python wait() on `work` returned at end_ns: ends its op if it is ours and open.
bool end_waited(const c10d::Work* work, int64_t end_ns);
// The step boundary the training thread last passed (ops issued from then on carry it).
void set_step(int64_t step);
int64_t current_step();
size_t open_count();

}  // namespace sp::pyext::observed

#endif  // SP_C10D_GROUP_HOOKS
