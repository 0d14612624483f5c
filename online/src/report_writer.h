// The end-of-run report: report.json (aggregates), timeline.json (Perfetto: real vs ideal of
// the last steps) and heatmap.svg (mean S_w per dp rank x stage, drawn by the engine's writer).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

struct TimelineOp {
  int rank = 0;
  std::string type;
  bool comm = false;
  double real_start = 0, real_end = 0, ideal_start = 0, ideal_end = 0;
};

struct TimelineStep {
  int64_t step = 0;
  std::vector<int> rank_dp, rank_stage;
  std::vector<TimelineOp> ops;
};

// Running totals over every analysed step (bounded: per rank, not per step).
struct ReportTotals {
  uint64_t analyzed = 0;
  double sum_S = 0, sum_time = 0, sum_ideal = 0, sum_launch_share = 0;
  std::map<std::string, uint64_t> causes;
  std::map<std::string, uint64_t> worst;
  std::map<std::string, uint64_t> worst_hosts;  // the host of a worst rank, when known
  std::vector<double> sum_worker_S;  // per rank
  uint64_t worker_steps = 0;         // steps summed in sum_worker_S
  std::vector<int> rank_dp, rank_stage;
  int dp_size = 1, pp_size = 1;
  void add(const StepVerdict& v);
};

std::string write_report_files(const std::string& dir, const ReportTotals& totals,
                               const nlohmann::ordered_json& extra,
                               const std::deque<TimelineStep>& timeline);

}  // namespace sp::online
