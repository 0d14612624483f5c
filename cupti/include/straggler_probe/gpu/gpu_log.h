// Warnings from the GPU-capture layers (cupti/, nccl_hooks/).
//
// The probe lives inside other people's processes, so these layers never throw and never spam:
// each distinct problem is reported once on stderr, prefixed so it is clearly ours, and the text
// is also kept as the "last warning" for tests and the Python layer. No dependency on spdlog:
// this code runs in LD_PRELOAD mode where every extra DT_NEEDED is a way to kill the host process.
#pragma once

#include <cstdint>
#include <string>

namespace sp::gpu {

// Distinct warning topics: each one prints at most once per process.
enum class WarnOnce : uint32_t {
  kCuptiUnavailable = 0,
  kCuptiNoDriver,
  kCuptiSecondMajor,
  kCuptiTimeBaseChanged,
  kCuptiForeignProfiler,
  kCuptiDropped,
  kCuptiBufferPoolExhausted,
  kCuptiBadEnv,
  kNcclRealMissing,
  kNcclGraphCapture,
  kNcclPluginVersion,
  kStepMarkerInvalid,
  kRankEnvInvalid,
  kCudaTimerUnavailable,
  kSummaryFile,
  kNvtxSteps,           // STRAGGLER_PROBE_STEP_NVTX unusable or in conflict (nccl_hooks/)
  kNvtxStepsStoodDown,  // NVTX steps ignored: the application marks its own
  kCount
};

// Prints "[straggler_probe] warning: <message>" the first time `topic` is raised; returns
// whether it printed. Thread-safe, allocation only on the first call of a topic.
bool warn_once(WarnOnce topic, const std::string& message);

// An informational line (not a warning), printed only when STRAGGLER_PROBE_VERBOSE=1.
void info(const std::string& message);

// The last warning text (empty if none).
std::string last_gpu_warning();

// How many warnings were printed so far (tests assert "exactly one").
uint32_t gpu_warning_count();

// Silences output to stderr (warnings are still counted and kept). Used in processes that are not
// training ranks, which must stay silent.
void set_gpu_log_silent(bool silent);

// Tests only: forget which topics were printed.
void reset_gpu_log_for_tests();

}  // namespace sp::gpu
