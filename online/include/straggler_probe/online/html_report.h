// report.html: one self-contained page (inline CSS, JS and data; no network, opens from disk)
// drawing a report: S and the ideal over steps, causes over steps, the ledger, the worker heatmap
// over time (ranks x steps), the alarms and the worst ranks' host and GPU
// (online/src/html_report/). Written by the live report writer, analyze-dir and analyze.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

// What report.html draws over time: per step S, the ideal and measured step time, the cause, and
// every rank's S_w (the worker heatmap, ranks x steps). Bounded however long the job runs: at
// most kMaxColumns columns, each covering `steps_per_column` consecutive closed steps; when they
// are all used, neighbouring columns are merged in pairs and the span doubles (so a column is
// the mean of its steps, never a sample of one). At most kMaxRows heatmap rows: a larger job's
// ranks are grouped in contiguous blocks, a block's value per step being its slowest rank's S_w
// (the straggler a reader looks for stays visible).
namespace html_report {

inline constexpr size_t kMaxColumns = 160;
inline constexpr size_t kMaxRows = 256;

// One column: the steps [first, last] it covers, sums over its analysed steps.
struct HistoryColumn {
  int64_t first = 0, last = 0;
  uint32_t closed = 0, analyzed = 0;
  double sum_S = 0, max_S = 0, sum_time = 0, sum_ideal = 0, sum_S_null = 0;
  std::map<std::string, uint32_t> causes;
  std::vector<double> sum_row_S;  // per heatmap row; empty: no analysed step of this layout
  uint32_t row_steps = 0;         // steps summed in sum_row_S
};

class StepHistory {
 public:
  // `cause`: what the causes plot counts the step under; "" = cause_name(v.cause) (the offline
  // analysis, which names no cause, passes its own label).
  void add(const StepVerdict& v, std::string_view cause = {});
  // {"steps_per_column", "columns": {first, last, analyzed, S, S_max, time_s, ideal_s, S_null,
  //  causes: {name: [count per column]}}, "heatmap": {"ranks", "ranks_per_row", "rows",
  //  "values": [[row values] or null per column]}}. Means over each column's analysed steps.
  nlohmann::ordered_json to_json() const;
  size_t columns() const { return columns_.size(); }

 private:
  void merge_pairs();
  void set_layout(size_t world);
  size_t row_of(size_t rank) const { return rank / ranks_per_row_; }

  std::vector<HistoryColumn> columns_;
  uint32_t steps_per_column_ = 1;
  size_t world_ = 0, ranks_per_row_ = 1, rows_ = 0;
  std::vector<double> row_scratch_;
};

}  // namespace html_report

// `report`: report.json's object (or the offline equivalent; every section is optional and the
// page says what is missing). `history`: the series over time (html_report::StepHistory's JSON:
// steps_per_column, columns, heatmap), or null. Names inside them (hosts, targets) are untrusted:
// the page shows them as text only.
std::string html_report_page(const nlohmann::ordered_json& report, const nlohmann::ordered_json& history);

// `data` as text that can stand inside <script type="application/json">: ASCII only (invalid
// UTF-8 replaced), and '<', '>', '&' written as \u escapes, so no string in it can close the
// element or open a comment, whatever it holds.
std::string json_for_script(const nlohmann::ordered_json& data);

}  // namespace sp::online
