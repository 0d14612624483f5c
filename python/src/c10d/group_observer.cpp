#include "group_observer.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "observed_ops.h"
#include "record_entry.h"

#ifdef SP_C10D_GROUP_HOOKS
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

// torch's bindings hold c10d objects by intrusive_ptr (torch/csrc/utils/pybind.h says the same).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true)
#endif

namespace py = pybind11;

namespace sp::pyext {
namespace {

// A by-name wrapper (hooks/collectives.py) is recording the op this thread is issuing.
thread_local int t_wrapper_depth = 0;

#ifdef SP_C10D_GROUP_HOOKS

using observed::IssuedOp;
using observed::kOpSlots;
using observed::Observer;
using observed::OpenOp;
using observed::OpKind;
using observed::Route;

// Pre-hooks whose post-hook never came (the op threw between them) are dropped past this many.
constexpr size_t kMaxPendingPerThread = 64;

struct Pending {
  const Observer* owner = nullptr;
  int64_t op_id = 0;
  int64_t start_ns = 0;
  uint64_t bytes = 0;
  Route route = Route::kCountOnly;
  bool inside_wrapper = false;
};

thread_local std::vector<Pending> t_pending;

uint64_t payload_bytes(const std::vector<at::Tensor>& tensors) {
  uint64_t total = 0;
  for (const at::Tensor& t : tensors) {
    if (t.defined()) total += static_cast<uint64_t>(t.numel()) * t.element_size();
  }
  return total;
}

void call_python(Observer& o, PyObject* Observer::*which, const py::tuple& args) {
  PyObject* fn = o.*which;
  if (fn == nullptr) return;
  try {
    py::reinterpret_borrow<py::object>(fn)(*args);
  } catch (py::error_already_set& err) {
    const auto type = err.type().attr("__name__").cast<std::string>();
    o.fail("process-group p2p hook raised " + type);
  }
}

void on_pre(Observer& o, const c10d::PreHookArgs& args) {
  o.seen.fetch_add(1, std::memory_order_relaxed);
  if (!o.active.load(std::memory_order_acquire)) return;
  const OpKind& k = o.kinds[static_cast<uint8_t>(args.name)];
  if (k.route == Route::kCountOnly) return;
  if (t_pending.size() >= kMaxPendingPerThread) {
    t_pending.erase(t_pending.begin());
    o.dropped.fetch_add(1, std::memory_order_relaxed);
  }
  Pending p{&o, args.op_id, 0, 0, k.route, t_wrapper_depth > 0};
  if (!p.inside_wrapper) {
    if (k.route == Route::kPython) {
      py::gil_scoped_acquire gil;
      call_python(o, &Observer::p2p_pre,
                  py::make_tuple(static_cast<int>(args.name), args.async_op,
                                 payload_bytes(args.input_tensors), args.root));
    } else {
      if (static_cast<unsigned long>(pthread_self()) == o.train_thread) {
        observed::sweep(false, -1);  // an op done by the next one's issue ended by now
      }
      p.bytes = payload_bytes(args.input_tensors);
      p.start_ns = realtime_ns();
    }
  }
  t_pending.push_back(p);
}

void on_post(const std::shared_ptr<Observer>& shared, const c10d::PostHookArgs& args) {
  Observer& o = *shared;
  auto it = std::find_if(t_pending.rbegin(), t_pending.rend(), [&](const Pending& p) {
    return p.owner == &o && p.op_id == args.op_id;
  });
  if (it == t_pending.rend()) return;
  const Pending p = *it;
  t_pending.erase(std::next(it).base());
  if (p.inside_wrapper || !o.active.load(std::memory_order_acquire)) return;
  if (p.route == Route::kPython) {
    py::gil_scoped_acquire gil;
    call_python(o, &Observer::p2p_post,
                py::make_tuple(args.work ? py::cast(args.work) : py::none()));
    return;
  }
  const OpKind& k = o.kinds[static_cast<uint8_t>(args.name)];
  const bool on_train = static_cast<unsigned long>(pthread_self()) == o.train_thread;
  IssuedOp op{p.start_ns, o.coll_seq.fetch_add(1, std::memory_order_relaxed), p.bytes, k.kind,
              k.coll, k.name_id, (on_train && !args.async_op) ? o.stream_main : o.stream_async};
  o.recorded.fetch_add(1, std::memory_order_relaxed);
  if (!args.work) {  // the backend finished it inside the call
    o.record_end(op, realtime_ns());
    return;
  }
  auto open = std::make_shared<OpenOp>();
  open->owner = shared;
  open->key = args.work.get();
  open->op = op;
  open->issued_step = observed::current_step();
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = args.work->getFuture();
  } catch (const std::exception&) {
    future.reset();  // a backend's work without a future (gloo's reduce-scatter)
  }
  if (future) {
    open->future = c10::weak_intrusive_ptr<c10::ivalue::Future>(future);
  } else {
    open->work = args.work;
  }
  observed::track(open);
  if (future) {
    // Runs on the backend's thread when the future completes (at once when it has): no GIL, no
    // Python, no lock.
    future->addCallback([open](c10::ivalue::Future&) noexcept {
      open->end(realtime_ns(), &Observer::future_ends);
    });
  }
}

const char* op_name(c10d::HookOpName op) {
  switch (op) {
    case c10d::HookOpName::SEND: return "SEND";
    case c10d::HookOpName::RECV: return "RECV";
    case c10d::HookOpName::BROADCAST: return "BROADCAST";
    case c10d::HookOpName::ALLREDUCE: return "ALLREDUCE";
    case c10d::HookOpName::REDUCE: return "REDUCE";
    case c10d::HookOpName::ALLGATHER: return "ALLGATHER";
    case c10d::HookOpName::REDUCE_SCATTER: return "REDUCE_SCATTER";
    case c10d::HookOpName::ALLTOALL: return "ALLTOALL";
    case c10d::HookOpName::BARRIER: return "BARRIER";
    case c10d::HookOpName::SCATTER: return "SCATTER";
    case c10d::HookOpName::GATHER: return "GATHER";
    case c10d::HookOpName::SPLIT: return "SPLIT";
    case c10d::HookOpName::NEW_WINDOW: return "NEW_WINDOW";
    case c10d::HookOpName::ALLREDUCE_COALESCED: return "ALLREDUCE_COALESCED";
    case c10d::HookOpName::ALLGATHER_BASE: return "ALLGATHER_BASE";
    case c10d::HookOpName::ALLGATHER_COALESCED: return "ALLGATHER_COALESCED";
    case c10d::HookOpName::ALLGATHER_INTO_TENSOR_COALESCED:
      return "ALLGATHER_INTO_TENSOR_COALESCED";
    case c10d::HookOpName::REDUCE_SCATTER_BASE: return "REDUCE_SCATTER_BASE";
    case c10d::HookOpName::REDUCE_SCATTER_TENSOR_COALESCED:
      return "REDUCE_SCATTER_TENSOR_COALESCED";
    case c10d::HookOpName::ALLTOALL_BASE: return "ALLTOALL_BASE";
    case c10d::HookOpName::UNKNOWN: return "UNKNOWN";
  }
  return nullptr;
}

// The Python object: owns the observer's Python callables and its hooks on the group.
class GroupObserver {
 public:
  GroupObserver(const py::capsule& record_entry, uint64_t group_id, int32_t group_size,
                unsigned long train_thread, const py::list& kinds, uint32_t stream_main,
                uint32_t stream_async, const py::object& p2p_pre, const py::object& p2p_post,
                int64_t hook_id, uint64_t first_coll_seq)
      : o_(std::make_shared<Observer>()), hook_id_(hook_id) {
    if (std::string(record_entry.name() ? record_entry.name() : "") != kRecordEntryCapsule) {
      throw py::value_error("GroupObserver: record_entry is not _core.record_entry()");
    }
    o_->record = record_entry.get_pointer<RecordEntry>()->record;
    if (o_->record == nullptr) throw py::value_error("GroupObserver: the runtime has no record");
    o_->group_id = group_id;
    o_->group_size = group_size;
    o_->train_thread = train_thread;
    o_->stream_main = stream_main;
    o_->stream_async = stream_async;
    o_->coll_seq.store(first_coll_seq);  // the wrappers may have numbered some before
    if (kinds.size() > kOpSlots) throw py::value_error("GroupObserver: more kinds than op names");
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (kinds[i].is_none()) continue;
      auto t = kinds[i].cast<py::tuple>();  // (kind, coll, name_id, route: 1 native, 2 python)
      const int route = t[3].cast<int>();
      if (route < 0 || route > 2) throw py::value_error("GroupObserver: route must be 0, 1 or 2");
      o_->kinds[i] = {t[0].cast<uint32_t>(), t[1].cast<uint32_t>(), t[2].cast<uint32_t>(),
                      static_cast<Route>(route)};
    }
    o_->p2p_pre = p2p_pre.inc_ref().ptr();
    o_->p2p_post = p2p_post.inc_ref().ptr();
  }

  GroupObserver(const GroupObserver&) = delete;
  GroupObserver& operator=(const GroupObserver&) = delete;
  ~GroupObserver() { detach(); }  // Python's dealloc: the GIL is held

  void attach(const py::object& pg_obj) {
    auto pg = py::cast<c10::intrusive_ptr<c10d::ProcessGroup>>(pg_obj);
    if (!pg) throw py::value_error("GroupObserver.attach: not a c10d ProcessGroup");
    std::shared_ptr<Observer> shared = o_;
    o_->active.store(true, std::memory_order_release);
    // torch calls a hook inside its collective call: nothing may throw back into it.
    pg->registerPreHook(hook_id_, [shared](const c10d::PreHookArgs& args) noexcept {
      try {
        on_pre(*shared, args);
      } catch (const std::exception& err) {
        shared->fail(std::string("process-group pre-hook (C++): ") + err.what());
      }
    });
    pg->registerPostHook(hook_id_, [shared](const c10d::PostHookArgs& args) noexcept {
      try {
        on_post(shared, args);
      } catch (const std::exception& err) {
        shared->fail(std::string("process-group post-hook (C++): ") + err.what());
      }
    });
    group_ = c10::weak_intrusive_ptr<c10d::ProcessGroup>(pg);
  }

  // Unhooks the group and stops recording; idempotent. The GIL is held (a Python call or dealloc).
  void detach() {
    o_->active.store(false, std::memory_order_release);
    if (auto pg = group_.lock()) {
      pg->unregisterPreHook(hook_id_);
      pg->unregisterPostHook(hook_id_);
    }
    group_ = c10::weak_intrusive_ptr<c10d::ProcessGroup>(c10::intrusive_ptr<c10d::ProcessGroup>());
    for (PyObject** fn : {&o_->p2p_pre, &o_->p2p_post}) {
      Py_XDECREF(*fn);
      *fn = nullptr;
    }
  }

  uint64_t next_coll() { return o_->coll_seq.fetch_add(1, std::memory_order_relaxed); }

  py::dict stats() const {
    py::dict d;
    d["seen"] = o_->seen.load();
    d["recorded"] = o_->recorded.load();
    d["coll_seq"] = o_->coll_seq.load();
    d["future_ends"] = o_->future_ends.load();
    d["seen_ends"] = o_->seen_ends.load();
    d["waited_ends"] = o_->waited_ends.load();
    d["ended_unwaited"] = o_->ended_unwaited.load();
    d["dropped"] = o_->dropped.load();
    return d;
  }

  const Observer& state() const { return *o_; }
  std::string failure() {
    const std::lock_guard<std::mutex> lock(o_->failure_mu);
    return o_->failure;
  }

 private:
  std::shared_ptr<Observer> o_;  // shared with the hooks and the ops' callbacks
  int64_t hook_id_;
  c10::weak_intrusive_ptr<c10d::ProcessGroup> group_{c10::intrusive_ptr<c10d::ProcessGroup>()};
};

#endif  // SP_C10D_GROUP_HOOKS

}  // namespace

void bind_group_observer(py::module_& m) {
  m.def("wrapper_enter", [] { ++t_wrapper_depth; },
        "A by-name wrapper records the op this thread issues next: the C++ hooks skip it.");
  m.def("wrapper_exit", [] { t_wrapper_depth = std::max(0, t_wrapper_depth - 1); });
#ifdef SP_C10D_GROUP_HOOKS
  m.attr("observes_groups") = true;
  m.def("hook_op_names", [] {
    py::list names;
    for (size_t i = 0; i < kOpSlots; ++i) {
      const char* name = op_name(static_cast<c10d::HookOpName>(i));
      if (name == nullptr) break;
      names.append(name);
    }
    return names;
  }, "torch's HookOpName values' names, by value.");
  py::class_<GroupObserver>(m, "GroupObserver")
      .def(py::init<const py::capsule&, uint64_t, int32_t, unsigned long, const py::list&, uint32_t,
                    uint32_t, const py::object&, const py::object&, int64_t, uint64_t>(),
           py::arg("record_entry"), py::arg("group_id"), py::arg("group_size"),
           py::arg("train_thread"), py::arg("kinds"), py::arg("stream_main"),
           py::arg("stream_async"), py::arg("p2p_pre"), py::arg("p2p_post"), py::arg("hook_id"),
           py::arg("first_coll_seq") = 0)
      .def("attach", &GroupObserver::attach, py::arg("group"))
      .def("detach", &GroupObserver::detach)
      .def("next_coll", &GroupObserver::next_coll,
           "The group's next collective sequence number (shared with the by-name wrappers).")
      .def_property_readonly("seen", [](const GroupObserver& g) { return g.state().seen.load(); })
      .def_property_readonly("coll_seq",
                             [](const GroupObserver& g) { return g.state().coll_seq.load(); })
      .def_property_readonly("failure", &GroupObserver::failure)
      .def("stats", &GroupObserver::stats);
  m.def("work_waited", [](const py::object& work_obj, int64_t end_ns) {
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = py::cast<c10::intrusive_ptr<c10d::Work>>(work_obj);
    } catch (const py::cast_error&) {
      return false;  // not a c10d Work
    }
    return work && observed::end_waited(work.get(), end_ns);
  }, py::arg("work"), py::arg("end_ns"),
     "A wait() on `work` returned at end_ns: ends it if it is an open op of ours.");
  m.def("settle_works", [](int64_t step) {
    observed::set_step(step);
    observed::sweep(true, step);
  }, py::arg("step"),
        "At a step boundary: ops complete by now, or issued kUnwaitedSteps steps ago, are "
        "recorded as ending now.");
  m.def("sweep_works", [] { observed::sweep(false, -1); },
        "The training thread resumed (after a backward): ops whose futures are complete ended by "
        "now, if their callbacks have not run yet.");
  m.def("open_ops", &observed::open_count);
#else
  m.attr("observes_groups") = false;
#endif
}

}  // namespace sp::pyext
