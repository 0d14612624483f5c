// The state of the CUPTI capture (cupti_capture.h's CuptiCapture::Impl), shared by the files that
// do its three jobs: cupti_capture.cpp (lifecycle: start, stop, pause, resume, the flush thread,
// the hot-path tags), capture_window.cpp (processing one flush window: parse, calibrate,
// attribute, emit) and capture_report.cpp (stats and the report).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "records/activity_api.h"
#include "records/activity_parser.h"
#include "records/buffer_pool.h"
#include "attribution/clock_calibration.h"
#include "loader/cupti_loader.h"
#include "attribution/launch_brackets.h"
#include "attribution/launch_markers.h"
#include "attribution/region_attribution.h"
#include "straggler_probe/gpu/cupti_capture.h"
#include "straggler_probe/probe.h"

namespace sp::gpu {

inline constexpr const char* kCaptureNotStarted =
    "not started (no sp_cupti_start and no CUDA communicator yet)";

// Set in a forked child (pthread_atfork): the parent's CUPTI state is not ours there.
bool capture_in_forked_child();

struct CuptiCapture::Impl {
  // Serialises start/stop/pause/resume and window processing. Never taken by CUPTI callbacks.
  std::mutex state_mutex;
  std::atomic<bool> attempted{false};
  std::atomic<bool> available{false};
  std::atomic<bool> active{false};
  std::atomic<bool> paused{false};

  CuptiCaptureOptions opts;
  cupti::CuptiApi api;
  int major = 0;
  uint32_t version = 0;
  std::unique_ptr<cupti::BufferPool> pool;
  std::unique_ptr<cupti::ActivityApi> activity;
  std::atomic<cupti::ActivityApi*> activity_fast{nullptr};  // hot-path view of `activity`
  std::unique_ptr<cupti::ActivityParser> parser;
  cupti::RegionAttribution regions;
  cupti::ClockCalibration clock;
  // Region attribution by launch markers (launch_markers.h): the hot path reads markers_fast,
  // which is null while capture is off or paused; the flush thread owns the brackets and the
  // activities still waiting for a marker launched after them.
  std::unique_ptr<cupti::LaunchMarkers> markers;
  cupti::CudaDriverApi driver_override;  // tests: a fake driver
  std::string markers_unavailable;       // why there are no markers (said once capture is on)
  std::atomic<cupti::LaunchMarkers*> markers_fast{nullptr};
  cupti::LaunchBrackets brackets;
  struct Undecided {
    cupti::GpuActivity activity;
    uint64_t window = 0;
  };
  std::vector<Undecided> undecided;
  uint64_t undecided_released = 0;
  uint64_t marker_stream_cupti = 0;      // the streamId CUPTI's marker records carry
  uint64_t zero_correlation = 0;         // activities CUPTI gave no correlation id
  uint32_t before_changes_warned = 0;  // time-base switches already said  // released outside every region with no later marker seen
  uint64_t windows = 0;
  uint64_t events_emitted = 0;
  uint64_t emit_failures = 0;
  uint64_t pauses = 0;
  uint32_t memcpy_name = 0;
  // Why capture is not on, for the report (guarded by state_mutex).
  std::string inactive_reason = kCaptureNotStarted;

  std::atomic<NcclKernelObserver> nccl_observer{nullptr};
  std::atomic<void*> nccl_observer_user{nullptr};

  // Flush thread.
  std::thread flusher;
  std::mutex cv_mutex;
  std::condition_variable cv;
  bool flush_requested = false;
  bool stop_thread = false;
  bool thread_done = false;

  bool start_locked(const cupti::CuptiApi& a, int maj, uint32_t ver,
                    const CuptiCaptureOptions& o);
  bool enable_locked(std::string* error);
  void calibrate_locked();
  bool process_locked(bool forced);
  void emit_spans(std::vector<cupti::RegionSpan>& spans);
  void create_markers_locked();
  // Launch markers out of `acts` into the brackets; the rest tagged by them, in `ready` once
  // decided (held at most hold_windows windows, then released as they are).
  void bracket_locked(std::vector<cupti::GpuActivity>& acts, uint64_t window, bool final,
                      std::vector<cupti::GpuActivity>& ready);
  void handle_activity_locked(const cupti::GpuActivity& a, uint64_t window);
  // Emits what the parser and the region attribution still hold (activities waiting for their
  // correlation, spans not yet quiescent): capture stops or hands CUPTI to another client.
  void emit_held_locked();
  void emit(const sp_event& ev);
  void thread_main();
  void stop_thread_and_wait(std::chrono::milliseconds limit);
};

}  // namespace sp::gpu
