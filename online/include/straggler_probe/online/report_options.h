// What OnlineAnalyzer::write_report adds to the analysis's own report files, and whether it is
// the run's last report.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sp::online {

struct ReportOptions {
  // false: written while the job runs. report.json's run.complete is false and the heatmap and
  // the timeline say "partial"; a job cut short (SIGTERM, SIGKILL) keeps the last such report.
  bool final = true;
  // false: timeline.json is left as it is (while the job runs, the large timeline of a large job
  // is rewritten less often than the rest, rank_pipeline/src/pipeline/analysis_worker.cpp).
  bool write_timeline = true;
  // More top-level sections of report.json (clock offsets, capture status...), in this order.
  nlohmann::ordered_json sections = nlohmann::ordered_json::object();
  // More files of the report directory: (file name, content).
  std::vector<std::pair<std::string, std::string>> files;
};

}  // namespace sp::online
