#include "work_stamp.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include "probe_clock.h"

// torch's bindings hold c10d objects by intrusive_ptr (torch/csrc/utils/pybind.h says the same).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true)

namespace py = pybind11;

namespace sp::pyext {
namespace {

struct WorkStamp {
  std::atomic<int64_t> end_ns{0};
  // Weak: the future holds the callback that holds this stamp, and a strong reference back
  // would keep both alive for ever.
  c10::weak_intrusive_ptr<c10::ivalue::Future> future{c10::intrusive_ptr<c10::ivalue::Future>()};
};

// The stamp, or, when the future completed and its callback has not run yet, now (stamped then).
// c10's Future wakes its waiters before it runs its callbacks: the code that waited for the op
// (DDP's reducer, the training thread's wait) can see it complete before the stamp is set, and
// then the op ended no later than now.
int64_t seen_end(WorkStamp& s) {
  const int64_t end = s.end_ns.load(std::memory_order_acquire);
  if (end != 0) return end;
  const c10::intrusive_ptr<c10::ivalue::Future> future = s.future.lock();
  if (!future || !future->completed()) return 0;
  int64_t expected = 0;
  s.end_ns.compare_exchange_strong(expected, realtime_ns(), std::memory_order_acq_rel);
  return s.end_ns.load(std::memory_order_acquire);
}

py::object stamp_completion(const py::object& work_obj) {
  auto work = py::cast<c10::intrusive_ptr<c10d::Work>>(work_obj);
  if (!work) throw py::value_error("straggler_probe._c10d.stamp_completion: not a c10d Work");
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const std::exception&) {
    return py::none();  // a backend's work without a future (gloo's send/recv)
  }
  if (!future) return py::none();
  auto stamp = std::make_shared<WorkStamp>();
  stamp->future = c10::weak_intrusive_ptr<c10::ivalue::Future>(future);
  // Runs on the backend's thread when the future completes (at once when it has): no GIL, no
  // Python, nothing that can throw. The first end wins (seen_end may have stamped it).
  future->addCallback([stamp](c10::ivalue::Future&) noexcept {
    int64_t expected = 0;
    stamp->end_ns.compare_exchange_strong(expected, realtime_ns(), std::memory_order_acq_rel);
  });
  return py::cast(stamp);
}

}  // namespace

void bind_work_stamps(py::module_& m) {
  py::class_<WorkStamp, std::shared_ptr<WorkStamp>>(m, "WorkStamp")
      .def_property_readonly(
          "end_ns", [](WorkStamp& s) { return seen_end(s); },
          "When the work's future completed (time.time_ns() clock), or now when it has and its "
          "callback has not run yet; 0 while it has not completed.");
  m.def("stamp_completion", &stamp_completion, py::arg("work"),
        "A WorkStamp whose end_ns a C++ callback on the work's future sets when it completes "
        "(no GIL); None when the work has no future.");
}

}  // namespace sp::pyext
