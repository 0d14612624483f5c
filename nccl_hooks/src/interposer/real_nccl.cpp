#include "interposer/real_nccl.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

namespace sp::nccl {
namespace {

struct State {
  std::once_flag once;
  RealNccl table;
  const char* source = "none";
};

std::atomic<State*> g_state{nullptr};
std::mutex g_state_mutex;

// Lock-free once created: every interposed call goes through here.
State& state() {
  State* s = g_state.load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  std::lock_guard<std::mutex> lock(g_state_mutex);
  s = g_state.load(std::memory_order_acquire);
  if (s == nullptr) {
    s = new State();  // leaked: NCCL calls may come during exit
    g_state.store(s, std::memory_order_release);
  }
  return *s;
}

// Our own image, to reject a lookup that found the interposer itself.
bool is_ours(void* fn) {
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<void*>(&real_nccl), &mine) == 0) return false;
  if (dladdr(fn, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

template <typename Fn>
void resolve(void* handle, const char* name, Fn*& out) {
  void* fn = nullptr;
  if (handle != nullptr) {
    fn = dlsym(handle, (std::string("p") + name).c_str());          // strong pncclX
    if (fn == nullptr) fn = dlsym(handle, name);                    // very old NCCL: no pnccl
  }
  if (fn == nullptr) fn = dlsym(RTLD_NEXT, (std::string("p") + name).c_str());
  if (fn == nullptr) fn = dlsym(RTLD_NEXT, name);
  if (fn != nullptr && is_ours(fn)) fn = nullptr;
  out = reinterpret_cast<Fn*>(fn);
}

void resolve_all(State& s) {
  void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  s.source = h != nullptr ? "libnccl.so.2 (already loaded)" : "RTLD_NEXT";
  RealNccl& t = s.table;
  resolve(h, "ncclAllReduce", t.AllReduce);
  resolve(h, "ncclBroadcast", t.Broadcast);
  resolve(h, "ncclBcast", t.Bcast);
  resolve(h, "ncclReduce", t.Reduce);
  resolve(h, "ncclAllGather", t.AllGather);
  resolve(h, "ncclReduceScatter", t.ReduceScatter);
  resolve(h, "ncclAlltoAll", t.AlltoAll);
  resolve(h, "ncclGather", t.Gather);
  resolve(h, "ncclScatter", t.Scatter);
  resolve(h, "ncclSend", t.Send);
  resolve(h, "ncclRecv", t.Recv);
  resolve(h, "ncclGroupStart", t.GroupStart);
  resolve(h, "ncclGroupEnd", t.GroupEnd);
  resolve(h, "ncclCommInitRank", t.CommInitRank);
  resolve(h, "ncclCommInitRankConfig", t.CommInitRankConfig);
  resolve(h, "ncclCommInitRankScalable", t.CommInitRankScalable);
  resolve(h, "ncclCommInitAll", t.CommInitAll);
  resolve(h, "ncclCommSplit", t.CommSplit);
  resolve(h, "ncclCommShrink", t.CommShrink);
  resolve(h, "ncclCommGrow", t.CommGrow);
  resolve(h, "ncclPutSignal", t.PutSignal);
  resolve(h, "ncclSignal", t.Signal);
  resolve(h, "ncclWaitSignal", t.WaitSignal);
  resolve(h, "ncclCommFinalize", t.CommFinalize);
  resolve(h, "ncclCommDestroy", t.CommDestroy);
  resolve(h, "ncclCommAbort", t.CommAbort);
  resolve(h, "ncclCommCount", t.CommCount);
  resolve(h, "ncclCommUserRank", t.CommUserRank);
  resolve(h, "ncclGetVersion", t.GetVersion);
  if (t.AllReduce == nullptr && t.GroupEnd == nullptr) s.source = "none";
  // The handle's reference is kept: libnccl must not go away under the resolved pointers.
}

}  // namespace

const RealNccl& real_nccl() {
  State& s = state();
  std::call_once(s.once, [&s] { resolve_all(s); });
  return s.table;
}

const char* real_nccl_source() {
  real_nccl();
  return state().source;
}

void reset_real_nccl_for_tests() {
  std::lock_guard<std::mutex> lock(g_state_mutex);
  g_state.store(new State(), std::memory_order_release);  // old one leaked: may still be read
}

}  // namespace sp::nccl
