// RunningPipeline: everything the probe runs in the background of one rank, wired together (the
// public face is include/straggler_probe/rank_pipeline/rank_pipeline.h's RankPipeline): the
// transport thread (sender on ranks != 0, collector on rank 0) and, on rank 0, the analysis
// thread. Owns the store. Knows whether the probe is running, stopped, or has stepped aside after
// a failure.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "analysis_worker.h"
#include "clock/clock_sync.h"
#include "hang/hang_board.h"
#include "http/metrics_service.h"
#include "straggler_probe/online/analysis_driver.h"
#include "straggler_probe/online/setting_defaults.h"
#include "straggler_probe/output_line.h"
#include "straggler_probe/rank_pipeline/kv_store.h"
#include "straggler_probe/rank_pipeline/rank_pipeline.h"
#include "straggler_probe/rank_pipeline/seconds.h"
#include "transport/transport.h"

namespace sp::rank_pipeline {

struct RankPipelineOptions {
  TransportOptions transport;
  AnalysisOptions analysis;
  std::chrono::milliseconds analysis_timeout{seconds_to_ms(online::setting_defaults::kAnalysisTimeoutS)};
  bool discard = false;  // transport=none: no store, no analysis; summaries are dropped
  bool clock_sync = online::setting_defaults::kClockSync;  // estimate every rank's clock offset to rank 0 (world_size > 1)
  std::chrono::milliseconds clock_sync_period{
      seconds_to_ms(online::setting_defaults::kClockSyncPeriodS)};
  // Rank 0's metrics server, /status and /control, and the textfile (http/; off by default).
  http::MetricsOptions metrics;
  nlohmann::ordered_json config;  // the user's settings, for /status
};

// The options from the public settings; std::invalid_argument for a fault_inject or
// transport_protocol it does not know (pipeline_options.cpp).
RankPipelineOptions to_pipeline_options(const PipelineSettings& settings);

class RunningPipeline {
 public:
  // Takes ownership of `store` (may be null for a single-rank job: an in-process store is used).
  RunningPipeline(RankPipelineOptions options, sp_kv_store* store);
  ~RunningPipeline();

  // After sp_shutdown: send / collect what is left (up to drain), then on rank 0 finish the
  // analysis and write the report (up to analysis_timeout). Threads that do not finish in time
  // are left behind with what they use (leaked on purpose): the job's exit never waits on us.
  void stop(std::chrono::milliseconds drain);

  // This rank's probe failed (its recording): every rank's probe steps aside. Never blocks.
  void request_stop(const std::string& why);

  RankPipelineState state() const { return state_.load(); }
  // True when stop() left a thread running: the owner must then never destroy this object.
  bool leaked() const { return leaked_; }
  std::string message() const;
  std::map<std::string, double> stats() const;
  // The hang notices this rank hears (HangBoard::wait_notice: the Python package dumps this
  // rank's stacks then) and rank 0's episodes. Shared: a waiter may outlive this object.
  std::shared_ptr<HangBoard> hang_board() const { return hang_board_; }

 private:
  void fail(const std::string& message);
  void store_lost(const std::string& why);
  void start_clock_sync();
  void note_batch();
  void start_metrics();
  online::ReportOptions report_sections(bool final) const;

  RankPipelineOptions options_;
  std::shared_ptr<KvClient> store_;
  std::shared_ptr<TransportCounters> counters_ = std::make_shared<TransportCounters>();
  std::shared_ptr<StopRequest> stop_ = std::make_shared<StopRequest>();
  std::shared_ptr<HangBoard> hang_board_ = std::make_shared<HangBoard>();
  std::shared_ptr<AnalysisWorker> worker_;
  std::unique_ptr<TransportThread> transport_;
  std::unique_ptr<ClockSync> clock_;
  std::unique_ptr<http::MetricsService> metrics_;
  // Rank 0: time between whole steps reaching the analysis (a moving average), for the clock
  // uncertainty warning.
  std::atomic<int64_t> last_batch_ns_{0}, step_ns_{0};
  std::atomic<RankPipelineState> state_{RankPipelineState::kRunning};
  std::atomic<bool> failed_once_{false};
  bool leaked_ = false;
  mutable std::mutex message_mutex_;
  std::string message_;
};

// One line to stdout / stderr, whole, from any thread (shared with analyze-dir).
using runtime::print_line;
using runtime::print_stderr_line;
using runtime::print_warning_line;

}  // namespace sp::rank_pipeline
