// PipelineSettings: what _core.start_pipeline takes, one struct instead of 33 keyword arguments.
// Its setting fields carry the names of the settings table's rows (python/straggler_probe/
// _settings_table.py) and their defaults (setting_defaults.h, generated from that table), so that
// straggler_probe/_transport.py copies a resolved Config into it by name; the other fields say
// where this rank is and what it is for (rank, world size, host, device, session prefix).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "pipeline/rank_pipeline.h"
#include "straggler_probe/online/setting_defaults.h"

namespace sp::pyext {

// The fields named after rows of the settings table (PipelineSettings.SETTING_NAMES in Python).
#define SP_PIPELINE_SETTING_FIELDS(X)                                                          \
  X(max_lag) X(warmup_steps) X(step_timeout) X(analysis_timeout) X(out_dir) X(log_lines)         \
  X(fault_inject) X(clock_sync) X(clock_sync_period) X(slowdown_threshold) X(significance)      \
  X(alarm_significance) X(window_steps) X(summary_interval) X(hang_after_s) X(hang_multiple)    \
  X(timeline_ranks) X(metrics_port) X(metrics_addr) X(metrics_file) X(control_token)            \
  X(hostname) X(transport_protocol)
// The rest: this rank's place and the session, filled by the package itself.
#define SP_PIPELINE_PLACE_FIELDS(X) \
  X(rank) X(world_size) X(prefix) X(local_rank) X(local_world_size) X(device) X(discard) X(job) \
  X(config_json)

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
  int summary_interval = online::setting_defaults::kSummaryInterval;
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

// The pipeline's options from the settings. A fault_inject or transport_protocol it does not
// know is a ValueError naming it (the Python table checks them first; this is the C++ guard).
rank_pipeline::RankPipelineOptions to_pipeline_options(const PipelineSettings& s);

// Adds the PipelineSettings class (default constructor, one attribute per field, SETTING_NAMES).
void bind_pipeline_settings(pybind11::module_& m);

}  // namespace sp::pyext
