#include "straggler_probe/preload/activation.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/capture_hooks.h"
#include "straggler_probe/log.h"
#include "straggler_probe/preload/nvtx_steps.h"
#include "summary_file_writer.h"

namespace sp::preload {

namespace log = runtime::log;
namespace {

std::atomic<bool> g_forked{false};
std::atomic<bool> g_recording{false};
std::atomic<Activation*> g_activation{nullptr};
std::mutex g_mutex;
std::once_flag g_atfork_once;

void on_fork_child() {
  g_forked.store(true, std::memory_order_relaxed);
  g_recording.store(false, std::memory_order_relaxed);
  log::set_silent(true);
}

}  // namespace

bool in_forked_child() { return g_forked.load(std::memory_order_relaxed); }

bool recording_allowed() { return g_recording.load(std::memory_order_relaxed); }

const Activation& activate() {
  if (Activation* a = g_activation.load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (Activation* a = g_activation.load(std::memory_order_acquire)) return *a;
  auto* a = new Activation();  // leaked: read by every later NCCL call
  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, &on_fork_child); });
  a->env = read_rank_env();
  a->is_rank = a->env.is_rank && !in_forked_child();
  if (!a->is_rank) {
    // Not a training rank: silent, pass-through.
    log::set_silent(true);
  } else {
    if (!a->env.error.empty()) log::warn_once("rank_env_invalid", a->env.error);
    std::string error;
    if (!parse_step_marker(std::getenv("STRAGGLER_PROBE_STEP_MARKER"), &a->marker, &error)) {
      log::warn_once("step_marker_invalid", error + "; using auto");
      a->marker = StepMarker{};
    }
    // An NVTX step range (nvtx_steps.h) is the explicit choice: the operation-sequence detector
    // stands down, and a marker set at the same time is named once and ignored.
    if (nvtx_step_state() == NvtxStepState::kInjected) {
      if (a->marker.mode != StepMarker::Mode::kAuto && a->marker.mode != StepMarker::Mode::kOff) {
        log::warn_once("nvtx_steps",
                       std::string("STRAGGLER_PROBE_STEP_NVTX and STRAGGLER_PROBE_STEP_MARKER=") +
                           std::getenv("STRAGGLER_PROBE_STEP_MARKER") +
                           " are both set: steps end with the NVTX range, the marker is ignored");
      }
      a->marker.mode = StepMarker::Mode::kOff;
    }
    gpu::runtime_init_from_env();
    // Without Python nobody else drains the step summaries: per-rank files, if asked for.
    std::string why;
    start_summary_file_writer(a->env.rank, &why);
    gpu::capture_start();
    log::info("GPU capture active in rank " + std::to_string(a->env.rank) + "/" +
              std::to_string(a->env.world_size) + " (" + a->env.source + ")");
    g_recording.store(true, std::memory_order_relaxed);
  }
  g_activation.store(a, std::memory_order_release);
  return *a;
}

void reset_activation_for_tests() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_activation.store(nullptr);
  g_recording.store(false);
  g_forked.store(false);
}

}  // namespace sp::preload
