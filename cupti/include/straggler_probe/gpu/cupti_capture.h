// GPU kernel capture through the CUPTI Activity API: the probe's eyes on the GPU.
//
// Lifecycle: nothing happens at load time. start() (first NCCL communicator, the Python package,
// or sp_cupti_start) loads CUPTI by SONAME, enables the activity kinds and starts one flush thread.
// The flush thread wakes at each step end (request_flush) or every flush period, collects the
// completed buffers, parses them, attributes kernels to the probe's regions and emits one event
// per region instance with its GPU span (time source CUPTI, probe clock) plus memcpys.
// Without CUPTI or a driver: one warning, disabled, no further attempts, no harm.
//
// Coexistence with torch.profiler / Kineto / Nsight: Activity API only (no subscriber), never
// cuptiFinalize. pause() hands CUPTI over (forced flush, kinds disabled); resume() re-registers
// the callbacks, re-enables the kinds and restarts the clock calibration (Kineto may have
// installed a TSC timestamp callback meanwhile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sp::cupti {
struct CuptiApi;
struct CudaDriverApi;
}

namespace sp::gpu {

// How kernels are attributed to the probe's regions (launch_markers.h says why markers).
enum class RegionAttributionMode { kMarkers, kExternalCorrelation, kOff };

struct CuptiCaptureOptions {
  bool enabled = true;               // STRAGGLER_PROBE_CUPTI=0 disables
  uint32_t flush_period_ms = 500;    // STRAGGLER_PROBE_CUPTI_FLUSH_MS; 0 = no thread (tests)
  size_t buffer_bytes = 2u << 20;    // STRAGGLER_PROBE_CUPTI_BUFFER_KB
  size_t max_buffers = 16;           // STRAGGLER_PROBE_CUPTI_BUFFERS
  bool kernels_only = false;         // STRAGGLER_PROBE_CUPTI_KINDS=kernels
  uint32_t hold_windows = 1;
  // STRAGGLER_PROBE_CUPTI_ATTRIBUTION=markers|external|off
  RegionAttributionMode attribution = RegionAttributionMode::kMarkers;
};

// Reads the options; each malformed value is named in *errors (one line each) and left default.
CuptiCaptureOptions cupti_options_from_env(std::string* errors);

// The record parser's counters (activity_parser.h's ParserStats), reported as they are: one list
// for both structs and the copy between them.
#define SP_CUPTI_PARSER_COUNTERS(X) \
  X(records) X(kernels) X(memcpys) X(memsets) X(syncs) X(cuda_events) X(external_correlations) \
  X(zero_timestamps) X(graph_activities)
// The Activity API wrapper's counters (activity_api.h's ActivityApiStats) reported here.
#define SP_CUPTI_ACTIVITY_COUNTERS(X) X(dropped_records) X(buffers_refused) X(foreign_buffers)

struct CuptiCaptureStats {
  bool available = false;   // CUPTI loaded and activities enabled at least once
  bool active = false;      // capturing now
  bool paused = false;
  int cupti_major = 0;
  uint32_t cupti_version = 0;
  uint64_t windows = 0;
  // records .. zero_timestamps, and graph_activities (kernels, memcpys, memsets launched by CUDA
  // graph replays)
#define SP_DECLARE(name) uint64_t name = 0;
  SP_CUPTI_PARSER_COUNTERS(SP_DECLARE)
  // dropped_records (CUPTI's own count), buffers_refused (pool exhausted), foreign_buffers
  SP_CUPTI_ACTIVITY_COUNTERS(SP_DECLARE)
#undef SP_DECLARE
  uint64_t tagged_activities = 0;
  uint64_t untagged_activities = 0;
  uint64_t nccl_kernels = 0;
  uint64_t events_emitted = 0;
  uint64_t emit_failures = 0;
  uint64_t pauses = 0;
  double clock_skew_ppm = 0;        // CUPTI clock vs probe clock
  int64_t clock_offset_ns = 0;
  uint64_t clock_uncertainty_ns = 0;
  uint32_t time_base_changes = 0;
  int32_t time_base = 0;            // 0 unknown, 1 CUPTI ns, 2 ticks (a TSC callback)
  double ns_per_unit = 1.0;         // the fit's slope: ns per CUPTI time unit
  // Region attribution (launch_markers.h): its mode (0 markers, 1 external correlation, 2 off),
  // markers launched, driver calls that failed, markers whose record found its ring entry
  // overwritten, pushes with no CUDA context current, brackets never ended, and activities
  // released without a marker launched after them (decided on what was known).
  int32_t attribution = 0;
  uint64_t markers_issued = 0;
  uint64_t marker_failures = 0;
  uint64_t markers_lost = 0;
  uint64_t markers_no_context = 0;
  uint64_t brackets_open_expired = 0;
  uint64_t undecided_released = 0;
  // Marker records found in CUPTI's buffers (a launched marker never seen means CUPTI does not
  // record the memset's value: attribution cannot work, and the report says so), and the stream
  // ids both sides give the marker stream (CUPTI's record vs cuStreamGetId), for diagnosis.
  uint64_t markers_seen = 0;
  uint64_t marker_stream_cupti = 0;
  uint64_t marker_stream_driver = 0;
  uint64_t zero_correlation_activities = 0;  // kernels with correlation id 0: not attributable
};

class CuptiCapture {
 public:
  // The process-wide instance (leaked: the flush thread may outlive static destructors).
  static CuptiCapture& instance();

  CuptiCapture();
  ~CuptiCapture();
  CuptiCapture(const CuptiCapture&) = delete;
  CuptiCapture& operator=(const CuptiCapture&) = delete;

  // Loads CUPTI and starts capturing; idempotent. False when unavailable (warned once).
  bool start();
  // Same with a given CUPTI (tests inject a fake); `major`/`version` as the loader would report.
  bool start_with(const cupti::CuptiApi& api, int major, uint32_t version,
                  const CuptiCaptureOptions& opts);
  // Stops the flush thread and disables the kinds (no cuptiFinalize).
  void stop();

  bool pause(const char* reason);
  bool resume();

  // Asks the flush thread to process now (step end); never blocks.
  void request_flush();
  // Flushes and processes on the calling thread (tests, pause, shutdown).
  bool flush_now(bool forced = false);

  // Hot path: brackets around probe regions and NCCL operations (launch markers, or external
  // correlation ids). Per-thread nesting. push_region returns whether it opened one (false at
  // once while capture is off or paused); a pop only closes what this thread opened, so nesting
  // stays balanced across a pause.
  bool push_region(uint32_t kind, int32_t microbatch, uint32_t name_id);
  void pop_region();
  void push_nccl_op(uint64_t op);
  void pop_nccl_op();

  bool active() const;
  CuptiCaptureStats stats() const;
  // A first line saying whether capture is on ("GPU capture active: CUPTI 13, N kernels ..." or
  // "GPU capture inactive: <reason>"), then per region type seen a "<kind>[#name_id]:" line and
  // its top kernels by total time, one indented line each.
  std::string report(size_t top_k) const;

  // Called from the flush thread for each kernel launched inside an NCCL operation, with
  // probe-clock times.
  using NcclKernelObserver = void (*)(uint64_t op, uint64_t start_ns, uint64_t end_ns,
                                      const char* kernel_name, void* user);
  void set_nccl_kernel_observer(NcclKernelObserver fn, void* user);

  // Tests: back to the never-started state (stops first).
  void reset_for_tests();
  // Tests: the CUDA driver the launch markers use at the next start (a fake), instead of the
  // process's libcuda.so.1.
  void set_cuda_driver_for_tests(const cupti::CudaDriverApi& driver);

 private:
  // A region or NCCL bracket opened on this thread: a begin marker, else an external correlation
  // push (STRAGGLER_PROBE_CUPTI_ATTRIBUTION=external).
  bool open_bracket(uint64_t external_id);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sp::gpu
