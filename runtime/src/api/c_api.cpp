// The exported C ABI (probe.h). Every entry point is noexcept at the boundary: an exception from
// inside becomes SP_ERR_INTERNAL, one warning, and the probe stepping aside. Nothing here may
// block the caller, except sp_shutdown and sp_pop_summary, which say so.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string_view>

#include "capture/clock.h"
#include "capture/gpu_region_tags.h"
#include "lifecycle.h"
#include "straggler_probe/log.h"
#include "probe_state.h"
#include "consumer.h"
#include "recorder.h"
#include "straggler_probe/c_abi_guard.h"

using sp::runtime::Probe;
using sp::runtime::probe_instance;

namespace {

constexpr auto kShutdownTimeout = std::chrono::milliseconds(2000);

using sp::runtime::guarded;

// SP_STATS_FIELDS (probe.h) names every field of sp_stats: a field added to the struct alone
// would be missing from what readers copy.
#define SP_FIELD_SIZE(type, name) +sizeof(type)
static_assert(sizeof(sp_stats) == 0 SP_STATS_FIELDS(SP_FIELD_SIZE),
              "SP_STATS_FIELDS must list every field of sp_stats");
#undef SP_FIELD_SIZE

// The probe when it is recording, else nullptr.
Probe* active_probe() noexcept {
  Probe* p = probe_instance();
  if (p == nullptr || p->active_session.load(std::memory_order_acquire) == 0) return nullptr;
  return p;
}

// The tokens of this thread's open regions that pushed a CUPTI tag (gpu_region_tags.h), in
// nesting order. Ending a region pops its tag and the tags of inner regions an exception skipped,
// and nothing else, so CUPTI's per-thread stack stays balanced whatever the caller does (a region
// whose begin found capture off or paused pushed nothing and pops nothing). Trivial TLS: no guard.
struct GpuTagStack {
  uint64_t tokens[sp::runtime::kMaxRegionDepth];
  uint32_t depth;
};
thread_local GpuTagStack t_gpu_tags{};

void push_gpu_tag(uint64_t token, uint32_t kind, int32_t microbatch, uint32_t name_id) noexcept {
  if (token == 0 || sp_cupti_region_push == nullptr) return;
  GpuTagStack& t = t_gpu_tags;
  if (t.depth >= sp::runtime::kMaxRegionDepth) return;  // the runtime caps depth the same way
  if (sp_cupti_region_push(kind, microbatch, name_id) != 0) t.tokens[t.depth++] = token;
}

void pop_gpu_tags(uint64_t token) noexcept {
  GpuTagStack& t = t_gpu_tags;
  if (token == 0 || t.depth == 0 || sp_cupti_region_pop == nullptr) return;
  uint32_t i = t.depth;
  while (i > 0 && t.tokens[i - 1] != token) --i;
  if (i == 0) return;  // this region pushed no tag (or another thread began it)
  for (uint32_t n = t.depth - (i - 1); n > 0; --n) sp_cupti_region_pop();
  t.depth = i - 1;
}

}  // namespace

extern "C" {

SP_API uint32_t sp_abi_version(void) { return SP_ABI_VERSION; }

SP_API void sp_config_init(sp_config* cfg) {
  if (cfg == nullptr) return;
  std::memset(cfg, 0, sizeof(*cfg));
  cfg->struct_size = sizeof(sp_config);
  cfg->rank = -1;
  cfg->world_size = -1;
  cfg->local_rank = -1;
}

SP_API int sp_init(const sp_config* cfg) {
  return guarded("sp_init", static_cast<int>(SP_ERR_INTERNAL),
                 [&] { return sp::runtime::init_probe(cfg); });
}

SP_API int sp_shutdown(void) {
  return guarded("sp_shutdown", static_cast<int>(SP_ERR_INTERNAL),
                 [] { return sp::runtime::shutdown_probe(kShutdownTimeout); });
}

SP_API int sp_is_enabled(void) { return active_probe() != nullptr ? 1 : 0; }

SP_API uint64_t sp_now_ns(void) { return sp::runtime::probe_now_ns(); }

SP_API uint32_t sp_intern(const char* name) {
  return guarded("sp_intern", 0u, [&]() -> uint32_t {
    Probe* p = active_probe();
    if (p == nullptr) return 0;
    if (name == nullptr) return 0;
    sp::runtime::NameTable::InternError error{};
    const uint32_t id = p->names.intern(name, &error);
    using E = sp::runtime::NameTable::InternError;
    if (error == E::kTooLong) {
      sp::runtime::log::warn_once("intern_too_long",
                                fmt::format("sp_intern: names longer than {} bytes are not interned",
                                            sp::runtime::kMaxNameLength));
    } else if (error == E::kFull) {
      sp::runtime::log::warn_once("intern_full",
                                fmt::format("sp_intern: the name table is full ({} names); new "
                                            "names get id 0", sp::runtime::kMaxNames));
    }
    return id;
  });
}

SP_API uint64_t sp_region_begin(uint32_t kind, int32_t microbatch, uint32_t name_id) {
  return guarded("sp_region_begin", uint64_t{0}, [&] {
    const uint64_t token = sp::runtime::begin_region(kind, microbatch, name_id);
    push_gpu_tag(token, kind, microbatch, name_id);
    return token;
  });
}

SP_API int sp_region_end(uint64_t token) {
  return guarded("sp_region_end", static_cast<int>(SP_ERR_INTERNAL), [&] {
    const int status = sp::runtime::end_region(token);  // the CPU end time first
    pop_gpu_tags(token);
    return status;
  });
}

SP_API int sp_record(const sp_event* ev) {
  if (ev == nullptr) return SP_ERR_INVALID;
  return guarded("sp_record", static_cast<int>(SP_ERR_INTERNAL),
                 [&] { return sp::runtime::record_event(*ev); });
}

SP_API int sp_mark_step(int64_t step) {
  return guarded("sp_mark_step", static_cast<int>(SP_ERR_INTERNAL),
                 [&] { return sp::runtime::mark_step(step); });
}

SP_API int64_t sp_last_marked_step(void) {
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return -1;
  return p->last_marked_step.load(std::memory_order_relaxed);
}

SP_API int sp_annotate(int32_t microbatch, const char* key, const char* value) {
  return guarded("sp_annotate", static_cast<int>(SP_ERR_INTERNAL), [&]() -> int {
    Probe* p = active_probe();
    if (p == nullptr) return SP_ERR_DISABLED;
    if (key == nullptr || value == nullptr) return SP_ERR_INVALID;
    const std::string_view k(key);
    const std::string_view v(value);
    if (k.empty() || k.size() > sp::runtime::kMaxAnnotationKey ||
        v.size() > sp::runtime::kMaxAnnotationValue) {
      sp::runtime::log::warn_once(
          "annotate_invalid",
          fmt::format("sp_annotate: keys must have 1 to {} bytes and values at most {}; "
                      "annotation '{}' is not recorded", sp::runtime::kMaxAnnotationKey,
                      sp::runtime::kMaxAnnotationValue, k.substr(0, 64)));
      return SP_ERR_INVALID;
    }
    sp::runtime::PendingAnnotation a{sp::runtime::probe_now_ns(),
                                   sp::runtime::Annotation{microbatch, std::string(k), std::string(v)}};
    std::lock_guard lock(p->annotation_mutex);
    if (p->annotation_inbox.size() >= sp::runtime::kMaxPendingAnnotations) {
      p->annotations_dropped.fetch_add(1, std::memory_order_relaxed);
      return SP_ERR_DROPPED;
    }
    p->annotation_inbox.push_back(std::move(a));
    return SP_OK;
  });
}

SP_API int sp_flush(void) {
  return guarded("sp_flush", static_cast<int>(SP_ERR_INTERNAL), []() -> int {
    Probe* p = active_probe();
    if (p == nullptr) return SP_ERR_DISABLED;
    // release: the consumer reads it (acquire) before taking the marks, so every step marked
    // before this call is among those the forced pass closes
    p->flush_requests.fetch_add(1, std::memory_order_release);
    p->wake_consumer();
    return SP_OK;
  });
}

SP_API int sp_set_topology(int32_t dp_rank, int32_t pp_stage) {
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  if (dp_rank < -1 || pp_stage < -1) return SP_ERR_INVALID;
  p->dp_rank.store(dp_rank, std::memory_order_relaxed);
  p->pp_stage.store(pp_stage, std::memory_order_relaxed);
  return SP_OK;
}

SP_API int sp_set_rank(int32_t rank, int32_t world_size) {
  return guarded("sp_set_rank", static_cast<int>(SP_ERR_INTERNAL), [&]() -> int {
    Probe* p = probe_instance();
    if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
    if (world_size < 1 || rank < 0 || rank >= world_size) return SP_ERR_INVALID;
    const int32_t was_rank = p->rank.exchange(rank, std::memory_order_relaxed);
    const int32_t was_world = p->world_size.exchange(world_size, std::memory_order_relaxed);
    if (was_rank == rank && was_world == world_size) return SP_OK;
    // Summaries the consumer made before now carry the old rank: re-stamp them (a handful at
    // most, bounded by the queue), so that rank 0 never files one under the wrong rank.
    sp::runtime::restamp_queued_summaries(*p);
    sp::runtime::log::set_context(fmt::format("rank={}", rank));
    sp::runtime::log::info(fmt::format("rank {} of {} (was {} of {} at sp_init)", rank,
                                       world_size, was_rank, was_world));
    return SP_OK;
  });
}

SP_API int sp_set_clock_offset(int64_t offset_ns) {
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  p->clock_offset_ns.store(offset_ns, std::memory_order_relaxed);
  return SP_OK;
}

SP_API int sp_pop_summary(void* buf, size_t capacity, size_t* size, int32_t timeout_ms) {
  return guarded("sp_pop_summary", static_cast<int>(SP_ERR_INTERNAL), [&]() -> int {
    Probe* p = probe_instance();
    if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
    if (size == nullptr || timeout_ms < 0) return SP_ERR_INVALID;
    using S = sp::runtime::SummaryQueue::PopStatus;
    switch (p->summaries.pop_encoded(buf, capacity, size, std::chrono::milliseconds(timeout_ms))) {
      case S::kOk: return SP_OK;
      case S::kTimeout: return SP_ERR_TIMEOUT;
      case S::kClosed: return SP_ERR_DISABLED;
      case S::kTooSmall: return SP_ERR_INVALID;
    }
    return SP_ERR_INTERNAL;
  });
}

SP_API int sp_set_summary_callback(sp_summary_callback callback, void* user) {
  if (sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  return guarded("sp_set_summary_callback", static_cast<int>(SP_ERR_INTERNAL), [&]() -> int {
    sp::runtime::store_summary_callback({callback, user});
    return SP_OK;
  });
}

SP_API int sp_get_stats(sp_stats* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  return guarded("sp_get_stats", static_cast<int>(SP_ERR_INTERNAL),
                 [&] { return sp::runtime::collect_stats(out); });
}

SP_API int sp_get_heartbeat(sp_heartbeat* out) {
  if (out == nullptr || out->struct_size < sizeof(sp_heartbeat)) return SP_ERR_INVALID;
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  const uint32_t size = out->struct_size;
  std::memset(out, 0, sizeof(sp_heartbeat));
  out->struct_size = size;
  return p->heartbeat.read(out) ? SP_OK : SP_ERR_TIMEOUT;
}

SP_API int sp_set_recording_paused(int paused) {
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  p->pause_wanted.store(paused != 0, std::memory_order_relaxed);
  return SP_OK;
}

SP_API int sp_get_pause_state(sp_pause_state* out) {
  if (out == nullptr) return SP_ERR_INVALID;
  *out = sp_pause_state{};
  Probe* p = probe_instance();
  if (p == nullptr || sp::runtime::in_forked_child()) return SP_ERR_DISABLED;
  out->paused = p->recording_paused.load(std::memory_order_relaxed) ? 1 : 0;
  out->wanted = p->pause_wanted.load(std::memory_order_relaxed) ? 1 : 0;
  out->pauses = p->pauses.load(std::memory_order_relaxed);
  out->steps_paused = p->steps_paused.load(std::memory_order_relaxed);
  return SP_OK;
}

SP_API const char* sp_last_warning(void) {
  if (sp::runtime::in_forked_child()) return "";
  try {
    return sp::runtime::log::last_warning_c_str();
  } catch (...) {
    return "";
  }
}

}  // extern "C"
