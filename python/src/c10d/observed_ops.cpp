#include "observed_ops.h"

#ifdef SP_C10D_GROUP_HOOKS

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace sp::pyext::observed {
namespace {

// Made on first use and never destroyed: at exit, destroying Works after torch's libraries have
// torn down would crash the job on its way out. Touched by the issuing threads (post-hooks) and
// the training thread's looks, never by the backends' callbacks.
std::mutex g_open_mu;
std::vector<std::shared_ptr<OpenOp>>& open_ops() {
  static auto* ops = new std::vector<std::shared_ptr<OpenOp>>();
  return *ops;
}
std::atomic<int64_t> g_step{0};
constexpr size_t kCompactAt = 1024;
constexpr size_t kMaxOpen = 8192;

bool future_done(const OpenOp& o) {
  const c10::intrusive_ptr<c10::ivalue::Future> future = o.future.lock();
  return future && future->completed();
}

}  // namespace

void sweep(bool futureless_too, int64_t step) {
  // (op, the counter its end goes to): seen complete by this look, or given up
  std::vector<std::pair<std::shared_ptr<OpenOp>, std::atomic<uint64_t> Observer::*>> due;
  {
    const std::lock_guard<std::mutex> lock(g_open_mu);
    std::erase_if(open_ops(), [&](const std::shared_ptr<OpenOp>& o) {
      if (o->ended.load(std::memory_order_acquire)) return true;
      if (!o->owner->active.load(std::memory_order_acquire)) return true;
      bool complete = false;
      if (!o->work) {
        complete = future_done(*o);
      } else if (futureless_too) {
        try {
          complete = o->work->isCompleted();
        } catch (const std::exception&) {
          complete = false;  // a failed op: given up by age
        }
      }
      // A futured op seen complete ended by now; a futureless one too, but nobody waited for it.
      if (complete) {
        due.emplace_back(o, o->work ? &Observer::ended_unwaited : &Observer::seen_ends);
        return true;
      }
      if (step >= 0 && step - o->issued_step >= kUnwaitedSteps) {
        due.emplace_back(o, &Observer::ended_unwaited);
        return true;
      }
      return false;
    });
  }
  const int64_t now = realtime_ns();
  for (auto& [op, counter] : due) op->end(now, counter);
}

bool end_waited(const c10d::Work* work, int64_t end_ns) {
  std::shared_ptr<OpenOp> found;
  {
    const std::lock_guard<std::mutex> lock(g_open_mu);
    std::vector<std::shared_ptr<OpenOp>>& ops = open_ops();
    auto it = std::find_if(ops.begin(), ops.end(), [&](const std::shared_ptr<OpenOp>& o) {
      return o->key == work;
    });
    if (it == ops.end()) return false;
    found = std::move(*it);
    ops.erase(it);
  }
  found->end(end_ns, &Observer::waited_ends);
  return true;
}

void track(std::shared_ptr<OpenOp> op) {
  std::vector<std::shared_ptr<OpenOp>> given_up;
  {
    const std::lock_guard<std::mutex> lock(g_open_mu);
    std::vector<std::shared_ptr<OpenOp>>& ops = open_ops();
    // The training thread's looks empty the table; a job whose ops come from other threads and
    // whose steps never end would only add to it. So it stays bounded here too: the ended ones
    // leave, and past kMaxOpen the oldest is given up (recorded as ending now).
    if (ops.size() >= kCompactAt) {
      std::erase_if(ops, [](const std::shared_ptr<OpenOp>& o) {
        return o->ended.load(std::memory_order_acquire);
      });
    }
    if (ops.size() >= kMaxOpen) {
      given_up.push_back(std::move(ops.front()));
      ops.erase(ops.begin());
    }
    ops.push_back(std::move(op));
  }
  for (const std::shared_ptr<OpenOp>& o : given_up) {
    o->end(realtime_ns(), &Observer::ended_unwaited);
  }
}

void set_step(int64_t step) { g_step.store(step, std::memory_order_relaxed); }
int64_t current_step() { return g_step.load(std::memory_order_relaxed); }

size_t open_count() {
  const std::lock_guard<std::mutex> lock(g_open_mu);
  return open_ops().size();
}

}  // namespace sp::pyext::observed

#endif  // SP_C10D_GROUP_HOOKS
