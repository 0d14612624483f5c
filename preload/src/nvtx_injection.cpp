// The NVTX injection entry point (built only when the nvtx3 headers were found).
//
// Every NVTX v3 instance in the process (each library or program compiled with the header-only
// NVTX: the application, libtorch, ...) calls InitializeInjectionNvtx2 once, at its first NVTX
// call, with its own export table; the callbacks installed here replace that instance's no-op
// implementations. Only the range and mark entry points are taken (core API and the domain API
// that nvtx3.hpp uses); everything else stays a no-op. The callbacks keep no lock and allocate
// nothing, except when a step range closes (once per step).
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "straggler_probe/preload/nvtx_steps.h"

namespace sp::preload {
namespace {

// Push/pop nesting of this thread: one bit per level says "a step range". Deeper levels than
// kTrackedDepth are counted but never step ranges (no real program nests that deep).
constexpr uint32_t kTrackedDepth = 1024;
struct ThreadRanges {
  uint32_t depth = 0;
  uint32_t step_depth = 0;  // step ranges open on this thread (only the outermost marks a step)
  uint64_t is_step[kTrackedDepth / 64] = {};
};
thread_local constinit ThreadRanges tl_ranges{};

// Start/end range ids: odd ids are step ranges, so that nvtxRangeEnd (any thread) needs no table.
constinit std::atomic<uint64_t> g_next_range{1};
// Step ranges opened with start/end and not ended yet (they may end on another thread).
constinit std::atomic<int64_t> g_started_steps{0};

// Only the outermost step range marks a step: a range of the same name nested in it (pushed on
// this thread, or started anywhere) does not split the step.
bool outermost_closed(const ThreadRanges& t) {
  return t.step_depth == 0 && g_started_steps.load(std::memory_order_acquire) <= 0;
}

// Registered strings (nvtxDomainRegisterString): the handle only says whether the string names
// the step range, so that registering costs nothing and holds no memory.
constinit char g_step_string = 0;
constinit char g_other_string = 0;
nvtxStringHandle_t handle_of(bool step) {
  return reinterpret_cast<nvtxStringHandle_t>(step ? &g_step_string : &g_other_string);
}

bool active() { return nvtx_step_state() == NvtxStepState::kInjected; }

bool is_step_message(const nvtxEventAttributes_t* attr) {
  // The message is all we read: older, shorter attribute structs that hold it are fine.
  constexpr size_t kNeeded = offsetof(nvtxEventAttributes_t, message) + sizeof(attr->message);
  if (attr == nullptr || attr->size < kNeeded) return false;
  switch (attr->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return nvtx_range_matches(nvtx_step_range(), attr->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return nvtx_range_matches(nvtx_step_range(), attr->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return attr->message.registered == handle_of(true);
    default: return false;
  }
}

// ---- push / pop (per thread, nesting) ----------------------------------------------------
int push(bool step) {
  ThreadRanges& t = tl_ranges;
  const uint32_t level = t.depth++;
  if (level < kTrackedDepth) {
    const uint64_t bit = uint64_t{1} << (level % 64);
    if (step) {
      t.is_step[level / 64] |= bit;
      if (t.step_depth++ == 0) nvtx_step_range_opened();  // idempotent: cheap when nested
    } else {
      t.is_step[level / 64] &= ~bit;
    }
  }
  return static_cast<int>(level);
}

int pop() {
  ThreadRanges& t = tl_ranges;
  if (t.depth == 0) return -1;  // a pop without a push
  const uint32_t level = --t.depth;
  if (level < kTrackedDepth && (t.is_step[level / 64] >> (level % 64) & 1u) != 0) {
    --t.step_depth;
    if (outermost_closed(t)) nvtx_step_range_closed();
  }
  return static_cast<int>(level);
}

int NVTX_API push_a(const char* message) {
  return push(nvtx_range_matches(nvtx_step_range(), message));
}
int NVTX_API push_w(const wchar_t* message) {
  return push(nvtx_range_matches(nvtx_step_range(), message));
}
int NVTX_API push_ex(const nvtxEventAttributes_t* attr) { return push(is_step_message(attr)); }
int NVTX_API pop_core() { return pop(); }
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attr) {
  return push(is_step_message(attr));
}
int NVTX_API domain_pop(nvtxDomainHandle_t) { return pop(); }

// ---- start / end (any thread, not nested) --------------------------------------------------
nvtxRangeId_t start(bool step) {
  if (step) {
    g_started_steps.fetch_add(1, std::memory_order_acq_rel);
    nvtx_step_range_opened();
  }
  return g_next_range.fetch_add(1, std::memory_order_relaxed) << 1 | (step ? 1u : 0u);
}
void end(nvtxRangeId_t id) {
  if ((id & 1u) == 0) return;
  // An id ended twice (an application bug) must not drive the count below zero for good.
  int64_t open = g_started_steps.load(std::memory_order_acquire);
  while (open > 0 && !g_started_steps.compare_exchange_weak(open, open - 1,
                                                            std::memory_order_acq_rel)) {
  }
  if (open > 0 && outermost_closed(tl_ranges)) nvtx_step_range_closed();
}

nvtxRangeId_t NVTX_API start_a(const char* message) {
  return start(nvtx_range_matches(nvtx_step_range(), message));
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* message) {
  return start(nvtx_range_matches(nvtx_step_range(), message));
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* attr) {
  return start(is_step_message(attr));
}
void NVTX_API end_core(nvtxRangeId_t id) { end(id); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attr) {
  return start(is_step_message(attr));
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }

// ---- marks: a mark with the step name is a step boundary ---------------------------------
void NVTX_API mark_a(const char* message) {
  if (nvtx_range_matches(nvtx_step_range(), message)) nvtx_step_range_closed();
}
void NVTX_API mark_w(const wchar_t* message) {
  if (nvtx_range_matches(nvtx_step_range(), message)) nvtx_step_range_closed();
}
void NVTX_API mark_ex(const nvtxEventAttributes_t* attr) {
  if (is_step_message(attr)) nvtx_step_range_closed();
}
void NVTX_API domain_mark_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attr) {
  if (is_step_message(attr)) nvtx_step_range_closed();
}

nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) {
  return handle_of(nvtx_range_matches(nvtx_step_range(), s));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return handle_of(nvtx_range_matches(nvtx_step_range(), s));
}

template <typename Fn>
void install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (table == nullptr || id >= size || table[id] == nullptr) return;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace sp::preload

// Called by each NVTX instance at its first NVTX call (NVTX_INJECTION64_PATH names this
// library). Returns nonzero: zero would make NVTX print an error and unload us. When NVTX steps
// are not wanted here (a process that inherited the variable but is not a rank), nothing is
// installed and every NVTX call of that instance stays a no-op.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace sp::preload;
  if (get_export_table == nullptr || !active()) return 1;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 1;
  }
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) != 0) {
    install(core, core_size, NVTX_CBID_CORE_MarkEx, &mark_ex);
    install(core, core_size, NVTX_CBID_CORE_MarkA, &mark_a);
    install(core, core_size, NVTX_CBID_CORE_MarkW, &mark_w);
    install(core, core_size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
    install(core, core_size, NVTX_CBID_CORE_RangeStartA, &start_a);
    install(core, core_size, NVTX_CBID_CORE_RangeStartW, &start_w);
    install(core, core_size, NVTX_CBID_CORE_RangeEnd, &end_core);
    install(core, core_size, NVTX_CBID_CORE_RangePushEx, &push_ex);
    install(core, core_size, NVTX_CBID_CORE_RangePushA, &push_a);
    install(core, core_size, NVTX_CBID_CORE_RangePushW, &push_w);
    install(core, core_size, NVTX_CBID_CORE_RangePop, &pop_core);
  }
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0) {
    install(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
  }
  if (const auto* version =
          static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
      version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
      version->SetInjectionNvtxVersion != nullptr) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return 1;
}
