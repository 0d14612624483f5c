// The rank pipeline as others use it (the Python binding, python/src): everything the probe runs
// in the background of one rank besides recording (the transport to rank 0 over the job's store,
// the clock-offset protocol, the hang watch, and on rank 0 the analysis, the report and the
// metrics server), started from plain settings and stopped once. Nothing here names a type of
// rank_pipeline/src: the running pipeline behind RankPipeline is src/pipeline/rank_pipeline.h's
// RunningPipeline.
//
// Thread-safety: stop() and request_stop() may be called from any thread, once each matters;
// the readers (state, message, stats) from any thread at any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "straggler_probe/online/setting_defaults.h"
#include "straggler_probe/rank_pipeline/kv_store.h"
#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {

// The fields named after rows of the settings table (PipelineSettings.SETTING_NAMES in Python).
#define SP_PIPELINE_SETTING_FIELDS(X)                                                          \
  X(max_lag) X(warmup_steps) X(step_timeout) X(analysis_timeout) X(out_dir) X(log_lines)         \
  X(fault_inject) X(clock_sync) X(clock_sync_period) X(slowdown_threshold) X(significance)      \
  X(alarm_significance) X(window_steps) X(recap_interval) X(hang_after_s) X(hang_multiple)    \
  X(timeline_ranks) X(metrics_port) X(metrics_addr) X(metrics_file) X(control_token)            \
  X(hostname) X(transport_protocol)
// The rest: this rank's place and the session, filled by the package itself.
#define SP_PIPELINE_PLACE_FIELDS(X) \
  X(rank) X(world_size) X(prefix) X(local_rank) X(local_world_size) X(device) X(discard) X(job) \
  X(config_json)

// What starts a pipeline: the user's settings as the Python package resolved them (their fields
// are named after the rows of the settings table, python/straggler_probe/_settings_table.py,
// and default to its values through setting_defaults.h, generated from it), and this rank's place.
struct PipelineSettings {
  // The settings (docs/CONFIG.md, under STRAGGLER_PROBE_ and the name in upper case).
  int max_lag = online::setting_defaults::kMaxLag;
  int64_t warmup_steps = online::setting_defaults::kWarmupSteps;  // the first step sent
  double step_timeout = online::setting_defaults::kStepTimeoutS;  // seconds
  double analysis_timeout = online::setting_defaults::kAnalysisTimeoutS;
  std::string out_dir;  // "": no files (the table's default directory is chosen in Python)
  bool log_lines = online::setting_defaults::kLogLines;
  std::string fault_inject = online::setting_defaults::kFaultInject;
  bool clock_sync = online::setting_defaults::kClockSync;
  double clock_sync_period = online::setting_defaults::kClockSyncPeriodS;
  double slowdown_threshold = online::setting_defaults::kSlowdownThreshold;
  double significance = online::setting_defaults::kSignificance;
  double alarm_significance = online::setting_defaults::kAlarmSignificance;
  int window_steps = online::setting_defaults::kWindowSteps;
  int recap_interval = online::setting_defaults::kRecapInterval;
  double hang_after_s = online::setting_defaults::kHangAfterS;
  double hang_multiple = online::setting_defaults::kHangMultiple;
  int timeline_ranks = online::setting_defaults::kTimelineRanks;
  int metrics_port = online::setting_defaults::kMetricsPort;
  std::string metrics_addr = online::setting_defaults::kMetricsAddr;
  std::string metrics_file = online::setting_defaults::kMetricsFile;  // "": none
  std::string control_token = online::setting_defaults::kControlToken;  // "": all refused
  std::string hostname = online::setting_defaults::kHostname;  // "": the system's
  std::string transport_protocol = online::setting_defaults::kTransportProtocol;
  // This rank and the session.
  int rank = 0;
  int world_size = 1;
  std::string prefix;          // the store keys' prefix: straggler_probe/<session>/
  int local_rank = -1;         // -1: unknown
  int local_world_size = -1;
  int device = -1;             // the CUDA device this rank trains on; -1: none
  bool discard = false;        // transport=none: no store, no analysis, summaries dropped
  std::string job;             // the launcher's job id, the metrics' `job` label
  std::string config_json = "{}";  // the resolved settings for /status (no token)
};

enum class RankPipelineState { kRunning, kStopped, kSteppedAside, kStoppedRemotely };

class HangBoard;         // src/hang/hang_board.h: this rank's hang notices, rank 0's episodes
class RunningPipeline;   // src/pipeline/rank_pipeline.h

class RankPipeline {
 public:
  // Starts the threads. Takes ownership of `store` (null for a single-rank job: an in-process
  // store is used), also when it throws: settings that check_pipeline_settings refuses, or a
  // `runtime` without a required call (runtime_calls.h), are std::invalid_argument, the store
  // destroyed. `runtime` is this process's runtime: where the steps come from.
  RankPipeline(const PipelineSettings& settings, sp_kv_store* store, const RuntimeCalls& runtime);
  ~RankPipeline();
  RankPipeline(const RankPipeline&) = delete;
  RankPipeline& operator=(const RankPipeline&) = delete;

  // After sp_shutdown: send / collect what is left (up to drain), then on rank 0 finish the
  // analysis and write the report (up to analysis_timeout). Threads that do not finish in time
  // are left behind with what they use (leaked on purpose): the job's exit never waits on us.
  void stop(std::chrono::milliseconds drain);
  // This rank's probe failed (its recording): every rank's probe steps aside. Never blocks.
  void request_stop(const std::string& why);

  RankPipelineState state() const;
  // True when stop() left a thread running. Destroying this object is still safe: the running
  // pipeline that thread uses is then kept (leaked on purpose), not destroyed.
  bool leaked() const;
  std::string message() const;
  std::map<std::string, double> stats() const;
  // The hang notices this rank hears and rank 0's episodes. Shared: a waiter may outlive this
  // object (wait_hang_notice below).
  std::shared_ptr<HangBoard> hang_board() const;

 private:
  std::unique_ptr<RunningPipeline> run_;
};

// std::invalid_argument naming a fault_inject or transport_protocol no pipeline knows; nothing
// else is checked here (the Python settings table checks every value first).
void check_pipeline_settings(const PipelineSettings& settings);

// Waits up to `timeout` for a hang notice newer than episode `seen`: its episode, or 0 (none
// came). The Python package dumps this rank's stacks then.
uint64_t wait_hang_notice(HangBoard& board, uint64_t seen, std::chrono::milliseconds timeout);

}  // namespace sp::rank_pipeline
