#include "straggler_probe/online/html_report.h"

#include <algorithm>
#include <cmath>

namespace sp::online::html_report {
namespace {

using json = nlohmann::ordered_json;

// Fewer digits than a double prints: the page draws them, and a long run's report.html is
// rewritten every few steps while the job runs.
json rounded(double x, double scale) {
  if (!std::isfinite(x)) return json();
  return std::round(x * scale) / scale;
}

json mean_or_null(double sum, uint32_t n, double scale) {
  return n ? rounded(sum / n, scale) : json();
}

void merge_into(HistoryColumn* a, const HistoryColumn& b) {
  a->first = std::min(a->first, b.first);
  a->last = std::max(a->last, b.last);
  a->closed += b.closed;
  a->analyzed += b.analyzed;
  a->sum_S += b.sum_S;
  a->max_S = std::max(a->max_S, b.max_S);
  a->sum_time += b.sum_time;
  a->sum_ideal += b.sum_ideal;
  a->sum_S_null += b.sum_S_null;
  for (const auto& [cause, n] : b.causes) a->causes[cause] += n;
  if (b.sum_row_S.empty()) return;
  if (a->sum_row_S.size() != b.sum_row_S.size()) {
    a->sum_row_S = b.sum_row_S;
    a->row_steps = b.row_steps;
    return;
  }
  for (size_t r = 0; r < b.sum_row_S.size(); ++r) a->sum_row_S[r] += b.sum_row_S[r];
  a->row_steps += b.row_steps;
}

}  // namespace

void StepHistory::merge_pairs() {
  std::vector<HistoryColumn> merged;
  merged.reserve(columns_.size() / 2 + 1);
  for (size_t i = 0; i < columns_.size(); i += 2) {
    merged.push_back(std::move(columns_[i]));
    if (i + 1 < columns_.size()) merge_into(&merged.back(), columns_[i + 1]);
  }
  columns_ = std::move(merged);
  steps_per_column_ *= 2;
}

// A new world size (first step, or the job changed shape): earlier heatmap columns describe
// other ranks, so they are dropped, not mixed in.
void StepHistory::set_layout(size_t world) {
  world_ = world;
  ranks_per_row_ = (world + kMaxRows - 1) / kMaxRows;
  rows_ = (world + ranks_per_row_ - 1) / ranks_per_row_;
  for (HistoryColumn& c : columns_) {
    c.sum_row_S.clear();
    c.row_steps = 0;
  }
}

void StepHistory::add(const StepVerdict& v, std::string_view cause) {
  if (columns_.empty() || columns_.back().closed >= steps_per_column_) {
    if (columns_.size() >= kMaxColumns) merge_pairs();
    if (columns_.empty() || columns_.back().closed >= steps_per_column_) {
      columns_.emplace_back();
      columns_.back().first = columns_.back().last = v.step;
    }
  }
  HistoryColumn& c = columns_.back();
  c.first = std::min(c.first, v.step);
  c.last = std::max(c.last, v.step);
  ++c.closed;
  if (!v.analyzed) return;
  ++c.analyzed;
  c.sum_S += v.S;
  c.max_S = std::max(c.max_S, v.S);
  c.sum_time += v.time_s;
  c.sum_ideal += v.ideal_s;
  c.sum_S_null += v.S_null;
  ++c.causes[std::string(cause.empty() ? cause_name(v.cause) : cause)];
  if (v.worker_S.empty()) return;
  if (v.worker_S.size() != world_) set_layout(v.worker_S.size());
  row_scratch_.assign(rows_, 0.0);
  for (size_t r = 0; r < v.worker_S.size(); ++r) {
    row_scratch_[row_of(r)] = std::max(row_scratch_[row_of(r)], v.worker_S[r]);
  }
  if (c.sum_row_S.size() != rows_) {
    c.sum_row_S.assign(rows_, 0.0);
    c.row_steps = 0;
  }
  for (size_t i = 0; i < rows_; ++i) c.sum_row_S[i] += row_scratch_[i];
  ++c.row_steps;
}

json StepHistory::to_json() const {
  json first = json::array(), last = json::array(), analyzed = json::array(), S = json::array(),
       S_max = json::array(), time_s = json::array(), ideal_s = json::array(),
       S_null = json::array(), values = json::array();
  std::map<std::string, json> causes;
  for (const HistoryColumn& c : columns_) {
    for (const auto& [cause, n] : c.causes) causes.emplace(cause, json::array());
  }
  for (const HistoryColumn& c : columns_) {
    first.push_back(c.first);
    last.push_back(c.last);
    analyzed.push_back(c.analyzed);
    S.push_back(mean_or_null(c.sum_S, c.analyzed, 1e4));
    S_max.push_back(c.analyzed ? rounded(c.max_S, 1e4) : json());
    time_s.push_back(mean_or_null(c.sum_time, c.analyzed, 1e6));
    ideal_s.push_back(mean_or_null(c.sum_ideal, c.analyzed, 1e6));
    S_null.push_back(mean_or_null(c.sum_S_null, c.analyzed, 1e4));
    for (auto& [cause, counts] : causes) {
      const auto it = c.causes.find(cause);
      counts.push_back(it == c.causes.end() ? 0u : it->second);
    }
    json row_values = json::array();
    for (double sum : c.sum_row_S) row_values.push_back(mean_or_null(sum, c.row_steps, 1e4));
    values.push_back(c.sum_row_S.empty() ? json() : std::move(row_values));
  }
  json cause_json = json::object();
  for (auto& [cause, counts] : causes) cause_json[cause] = std::move(counts);
  return {{"steps_per_column", steps_per_column_},
          {"columns",
           {{"first", first}, {"last", last}, {"analyzed", analyzed}, {"S", S}, {"S_max", S_max},
            {"time_s", time_s}, {"ideal_s", ideal_s}, {"S_null", S_null}, {"causes", cause_json}}},
          {"heatmap",
           {{"ranks", world_}, {"ranks_per_row", ranks_per_row_}, {"rows", rows_}, {"values", values}}}};
}

}  // namespace sp::online::html_report
