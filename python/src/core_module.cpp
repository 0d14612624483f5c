// straggler_probe._core: the Python face of the runtime's C ABI (probe.h) and of the background
// pipeline (transport + rank-0 analysis). Recording calls keep the GIL (they are a few hundred
// nanoseconds); anything that waits releases it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "gpu_regions.h"
#include "pipeline_settings.h"
#include "python_kv_store.h"
#include "record_entry.h"
#include "runtime_table.h"
#include "straggler_probe/rank_pipeline/rank_pipeline.h"
#include "straggler_probe/rank_pipeline/seconds.h"
#include "straggler_probe/probe.h"

namespace py = pybind11;

namespace {

std::mutex g_pipeline_mutex;
std::unique_ptr<sp::rank_pipeline::RankPipeline> g_pipeline;
py::dict* g_final_status = nullptr;  // the last pipeline's numbers, readable after it stopped

py::dict status_of(const sp::rank_pipeline::RankPipeline& p);

using sp::pyext::runtime;

using sp::rank_pipeline::seconds_to_ms;  // the Python API takes seconds

py::tuple init(int rank, int world_size, int local_rank) {
  sp_config cfg;
  runtime().config_init(&cfg);
  cfg.rank = rank;
  cfg.world_size = world_size;
  cfg.local_rank = local_rank;
  const int rc = runtime().init(&cfg);
  return py::make_tuple(rc, std::string(runtime().last_warning()));
}

int record(uint32_t kind, uint64_t start_ns, uint64_t end_ns, int32_t microbatch, uint32_t name_id,
           uint32_t stream, uint32_t coll, uint64_t group_id, uint64_t seq, uint64_t bytes,
           int32_t peer, int32_t group_size, uint32_t time_source, uint64_t step_plus_one) {
  sp_event ev{};
  ev.start_ns = start_ns;
  ev.end_ns = end_ns < start_ns ? start_ns : end_ns;
  ev.group_id = group_id;
  ev.seq = seq;
  ev.bytes = bytes;
  ev.kind = kind;
  ev.coll = coll;
  ev.microbatch = microbatch;
  ev.peer = peer;
  ev.group_size = group_size;
  ev.stream = stream;
  ev.name_id = name_id;
  ev.time_source = time_source;
  ev.step_plus_one = step_plus_one;
  return runtime().record(&ev);
}

py::dict stats() {
  sp_stats s{};
  py::dict out;
  if (runtime().get_stats(&s) != SP_OK) return out;
#define SP_FIELD(type, name) out[#name] = s.name;
  SP_STATS_FIELDS(SP_FIELD)  // one list with the C struct (probe.h)
#undef SP_FIELD
  return out;
}

// /control's pause of this rank's recording (sp_get_pause_state), or None when the runtime in
// use predates it.
py::object pause_state() {
  sp_pause_state s{};
  if (runtime().get_pause_state == nullptr || runtime().get_pause_state(&s) != SP_OK) {
    return py::none();
  }
  py::dict out;
  out["paused"] = s.paused != 0;
  out["wanted"] = s.wanted != 0;
  out["pauses"] = s.pauses;
  out["steps_paused"] = s.steps_paused;
  return out;
}

// GPU capture counters, or None when the runtime has no GPU capture.
py::object cupti_stats() {
  if (runtime().cupti_get_stats == nullptr) return py::none();
  sp_cupti_stats s{};
  s.struct_size = sizeof(s);
  if (runtime().cupti_get_stats(&s) != SP_OK) return py::none();
  py::dict out;
#define SP_FIELD(type, name) out[#name] = s.name;
  SP_CUPTI_STATS_FIELDS(SP_FIELD)  // one list with the C struct (cupti_c_api.h)
#undef SP_FIELD
  out["active"] = s.active != 0;
  out["paused"] = s.paused != 0;
  return out;
}

// store: a capsule from straggler_probe._c10d.wrap_store (C++ store, no GIL in the transport),
// a Python store object (the GIL is taken per call), or None (single rank: in-process store).
void start_pipeline(py::object store, const sp::rank_pipeline::PipelineSettings& settings) {
  sp::rank_pipeline::check_pipeline_settings(settings);  // before the store changes hands
  sp_kv_store* kv = nullptr;
  if (PyCapsule_CheckExact(store.ptr())) {
    kv = static_cast<sp_kv_store*>(PyCapsule_GetPointer(store.ptr(), SP_KV_STORE_CAPSULE));
    if (kv == nullptr) throw py::error_already_set();
    PyCapsule_SetDestructor(store.ptr(), nullptr);  // ownership moves to the pipeline
    PyCapsule_SetName(store.ptr(), "straggler_probe.kv_store.taken");
  } else if (!store.is_none()) {
    kv = sp::pyext::make_python_kv_store(store);
  }
  std::lock_guard<std::mutex> lock(g_pipeline_mutex);
  if (g_pipeline) throw std::runtime_error("the straggler_probe pipeline is already running");
  py::gil_scoped_release release;  // the constructor starts threads that may want the GIL
  g_pipeline = std::make_unique<sp::rank_pipeline::RankPipeline>(
      settings, kv, sp::pyext::pipeline_calls(runtime()));
}

void stop_pipeline(double drain_s) {
  std::unique_ptr<sp::rank_pipeline::RankPipeline> pipeline;
  {
    std::lock_guard<std::mutex> lock(g_pipeline_mutex);
    pipeline = std::move(g_pipeline);
  }
  if (!pipeline) return;
  {
    py::gil_scoped_release release;
    pipeline->stop(seconds_to_ms(drain_s));
  }
  // Kept for pipeline_status(): bench and tests read the final numbers after the stop.
  if (g_final_status == nullptr) g_final_status = new py::dict();  // never freed: module lifetime
  *g_final_status = status_of(*pipeline);
}

std::string state_name(sp::rank_pipeline::RankPipelineState s) {
  switch (s) {
    case sp::rank_pipeline::RankPipelineState::kRunning: return "running";
    case sp::rank_pipeline::RankPipelineState::kStopped: return "stopped";
    case sp::rank_pipeline::RankPipelineState::kSteppedAside: return "stepped-aside";
    case sp::rank_pipeline::RankPipelineState::kStoppedRemotely: return "stopped-by-another-rank";
  }
  return "unknown";
}

void request_stop(const std::string& why) {
  std::lock_guard<std::mutex> lock(g_pipeline_mutex);
  if (g_pipeline) g_pipeline->request_stop(why);
}

py::dict status_of(const sp::rank_pipeline::RankPipeline& p) {
  py::dict out;
  out["state"] = state_name(p.state());
  out["message"] = p.message();
  for (const auto& [k, v] : p.stats()) out[py::str(k)] = v;
  return out;
}

// Waits (without the GIL) up to timeout_s for a hang notice newer than `seen`: its episode, or 0
// (none came, or the pipeline stopped). The board is shared: stop_pipeline may run meanwhile.
uint64_t wait_hang_notice(uint64_t seen, double timeout_s) {
  std::shared_ptr<sp::rank_pipeline::HangBoard> board;
  {
    std::lock_guard<std::mutex> lock(g_pipeline_mutex);
    if (g_pipeline) board = g_pipeline->hang_board();
  }
  if (!board) return 0;
  py::gil_scoped_release release;
  return sp::rank_pipeline::wait_hang_notice(*board, seen, seconds_to_ms(timeout_s));
}

py::dict pipeline_status() {
  std::lock_guard<std::mutex> lock(g_pipeline_mutex);
  if (g_pipeline) return status_of(*g_pipeline);
  if (g_final_status != nullptr) return g_final_status->attr("copy")().cast<py::dict>();
  py::dict out;
  out["state"] = "off";
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "straggler_probe runtime (C ABI of probe.h) and background pipeline";
  m.attr("ABI_VERSION") = SP_ABI_VERSION;
  m.attr("OP_FORWARD") = static_cast<int>(SP_OP_FORWARD);
  m.attr("OP_BACKWARD") = static_cast<int>(SP_OP_BACKWARD);
  m.attr("OP_OPTIMIZER") = static_cast<int>(SP_OP_OPTIMIZER);
  m.attr("OP_COLLECTIVE") = static_cast<int>(SP_OP_COLLECTIVE);
  m.attr("OP_SEND") = static_cast<int>(SP_OP_SEND);
  m.attr("OP_RECV") = static_cast<int>(SP_OP_RECV);
  m.attr("OP_GC") = static_cast<int>(SP_OP_GC);
  m.attr("OP_DATA_WAIT") = static_cast<int>(SP_OP_DATA_WAIT);
  m.attr("OP_OTHER") = static_cast<int>(SP_OP_OTHER);

  m.def("abi_version", [] { return runtime().abi_version(); });
  sp::pyext::bind_gpu_regions(m);
  m.def("runtime_source", [] { return runtime().source; },
        "Whose runtime the probe uses: 'preloaded' (LD_PRELOAD) or 'shared' (loaded by path) "
        "libstraggler_probe.so, or 'built-in' (this module's copy, when that cannot be loaded).");
  m.def("runtime_library", [] { return runtime().library; },
        "Path of the libstraggler_probe.so in use; empty when built-in. NCCL_PROFILER_PLUGIN "
        "pointing at this file reuses the same loaded copy.");
  m.def("runtime_warning", [] { return runtime().warning; });
  // GPU capture hand-over (torch.profiler) and stats; SP_ERR_DISABLED without GPU capture.
  // (has_gpu_capture and the region tags: bind_gpu_regions.)
  m.def("cupti_pause", [](const std::string& reason) {
    return runtime().cupti_pause != nullptr ? runtime().cupti_pause(reason.c_str())
                                            : static_cast<int>(SP_ERR_DISABLED);
  }, py::call_guard<py::gil_scoped_release>());
  m.def("cupti_resume", [] {
    return runtime().cupti_resume != nullptr ? runtime().cupti_resume()
                                             : static_cast<int>(SP_ERR_DISABLED);
  }, py::call_guard<py::gil_scoped_release>());
  m.def("cupti_stats", &cupti_stats);
  m.def("init", &init, py::arg("rank"), py::arg("world_size"), py::arg("local_rank"),
        "sp_init; returns (status, last warning)");
  m.def("shutdown", [] { return runtime().shutdown(); }, py::call_guard<py::gil_scoped_release>());
  m.def("is_enabled", [] { return runtime().is_enabled() != 0; });
  m.def("now_ns", [] { return runtime().now_ns(); });
  m.def("intern", [](const std::string& name) { return runtime().intern(name.c_str()); });
  // Keywords with defaults: callers name what they set (a host region needs 7 of the 14 fields),
  // and positional calls in the declared order keep working.
  m.def("record", &record, py::arg("kind"), py::arg("start_ns"), py::arg("end_ns"),
        py::arg("microbatch") = -1, py::arg("name_id") = 0, py::arg("stream") = 0,
        py::arg("coll") = static_cast<uint32_t>(SP_COLL_NONE), py::arg("group_id") = 0,
        py::arg("seq") = 0, py::arg("bytes") = 0, py::arg("peer") = -1, py::arg("group_size") = 0,
        py::arg("time_source") = static_cast<uint32_t>(SP_TIME_CPU), py::arg("step_plus_one") = 0,
        "sp_record of one complete event; returns its status (SP_OK, or why it was not kept)");
  m.def("region_begin", [](uint32_t kind, int32_t mb, uint32_t name_id) {
    return runtime().region_begin(kind, mb, name_id);
  });
  m.def("region_end", [](uint64_t token) { return runtime().region_end(token); });
  m.def("mark_step", [](int64_t step) { return runtime().mark_step(step); });
  m.def("annotate", [](int32_t mb, const std::string& key, const std::string& value) {
    return runtime().annotate(mb, key.c_str(), value.c_str());
  });
  m.def("flush", [] { return runtime().flush(); });
  m.def("set_topology", [](int32_t dp, int32_t pp) { return runtime().set_topology(dp, pp); });
  m.def("set_rank", [](int32_t rank, int32_t world) { return runtime().set_rank(rank, world); },
        py::arg("rank"), py::arg("world_size"),
        "sp_set_rank: this rank's place, learnt after init (re-stamps queued summaries too)");
  m.def("set_clock_offset", [](int64_t ns) { return runtime().set_clock_offset(ns); });
  m.def("stats", &stats);
  // For straggler_probe._c10d's process-group hooks (group_observer.h): the record call of the
  // runtime instance this module uses, so that they record where everything else does.
  m.def("record_entry", [] {
    static const sp::pyext::RecordEntry entry{runtime().record};
    return py::capsule(const_cast<sp::pyext::RecordEntry*>(&entry),
                       sp::pyext::kRecordEntryCapsule);
  });
  m.def("pause_state", &pause_state);
  // Once per step (the Recorder, after its mark): whether the step now starting is paused.
  m.def("recording_paused", [] {
    sp_pause_state s{};
    return runtime().get_pause_state != nullptr && runtime().get_pause_state(&s) == SP_OK &&
           s.paused != 0;
  });
  m.def("last_warning", [] { return std::string(runtime().last_warning()); });

  sp::pyext::bind_pipeline_settings(m);
  m.def("start_pipeline", &start_pipeline, py::arg("store"), py::arg("settings"),
        "Starts this rank's pipeline (transport, clock sync, rank 0's analysis).");
  m.def("wait_hang_notice", &wait_hang_notice, py::arg("seen"), py::arg("timeout_s"),
        "Waits for rank 0's next hang notice after episode `seen`; its episode, or 0.");
  m.def("stop_pipeline", &stop_pipeline, py::arg("drain_s"));
  m.def("pipeline_status", &pipeline_status);
  m.def("request_stop", &request_stop, py::arg("why"),
        "This rank's recording failed: ask every rank's probe to step aside (never blocks).");
}
