// The report: report.json (aggregates), timeline.json (Perfetto: real vs ideal of the last
// steps) and heatmap.svg (mean S_w per dp rank x stage, drawn by the engine's writer), plus any
// files the caller adds. The one writer of the report directory: each file is written whole to a
// temporary name and renamed over the old one, so a reader (or a job killed mid-write) never sees
// a half-written file. Written while the job runs (ReportOptions::final = false) and once more at
// its end; every file says which.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/online_stats.h"
#include "straggler_probe/online/report_options.h"
#include "ledger.h"
#include "straggler_probe/online/verdict.h"
#include "timeline_writer.h"
#include "straggler_probe/online/html_report.h"

namespace sp::online {

// Running totals over every step (bounded: per rank, not per step).
struct ReportTotals {
  uint64_t analyzed = 0;
  uint64_t closed = 0;                 // analysed or skipped
  int64_t first_step = 0, last_step = 0;  // of the closed steps (valid when closed > 0)
  double sum_S = 0, sum_time = 0, sum_ideal = 0, sum_launch_share = 0;
  std::map<std::string, uint64_t> causes;
  std::map<std::string, uint64_t> worst;
  std::map<std::string, uint64_t> worst_hosts;  // the host of a worst rank, when known
  html_report::StepHistory history;  // report.html's series over time, bounded
  std::vector<double> sum_worker_S;  // per rank
  uint64_t worker_steps = 0;         // steps summed in sum_worker_S
  std::vector<int> rank_dp, rank_stage;
  int dp_size = 1, pp_size = 1;
  Ledger ledger;  // report.json's "lost" (ledger.h)
  void add(const StepVerdict& v);
};

// The analysis's own sections of report.json: its settings and its counters.
nlohmann::ordered_json config_json(const OnlineConfig& c);
nlohmann::ordered_json stats_json(const OnlineStats& s);

// report.json = tool, run (complete or partial, the steps covered), the aggregates, `analysis`'s
// sections (config, stats), then options.sections. Returns "" or the first error.
std::string write_report_files(const std::string& dir, const ReportTotals& totals,
                               const nlohmann::ordered_json& analysis,
                               const std::deque<TimelineStep>& timeline,
                               const ReportOptions& options, const TimelineRankLimit& timeline_limit = {});

// Writes `content` to `path` through a temporary file in the same directory and a rename.
std::string write_file_atomically(const std::string& path, const std::string& content);

}  // namespace sp::online
