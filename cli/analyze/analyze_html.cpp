// The offline analysis as report.html's report and series. Per step: S (no-delay / ideal, the
// engine's step slowdown), the traced and ideal step times, each worker's S_w = min(S of its dp
// rank, S of its stage) from the per-step attributions, and, in place of a cause (the offline
// engine names none per step), the op type whose real durations alone leave the most slowdown.
// The ledger, unless the caller has one: the traced time over the ideal, times the job's GPUs,
// all of it unattributed.
#include "analyze_html.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "straggler_probe/online/html_report.h"

namespace sp::cli {
namespace {

using json = nlohmann::ordered_json;
using namespace sp::whatif;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::map<int64_t, double> by_step(const std::vector<StepValue>& values) {
  std::map<int64_t, double> out;
  for (const StepValue& v : values) out[v.step] = v.value;
  return out;
}

// Per step, the S of each group (dp rank or stage) numbered 0..n-1.
std::map<int64_t, std::vector<double>> groups_by_step(const std::optional<Decomposition>& d, int n) {
  std::map<int64_t, std::vector<double>> out;
  if (!d) return out;
  for (const StepAttribution& s : d->per_step) {
    std::vector<double>& row = out[s.step];
    row.assign(static_cast<size_t>(n), kNaN);
    for (const GroupValue& g : s.groups) {
      char* end = nullptr;
      const long i = std::strtol(g.key.c_str(), &end, 10);
      if (end != g.key.c_str() && *end == '\0' && i >= 0 && i < n) row[static_cast<size_t>(i)] = g.value;
    }
  }
  return out;
}

double value_at(const std::map<int64_t, double>& m, int64_t step) {
  const auto it = m.find(step);
  return it == m.end() ? kNaN : it->second;
}

// S_w per worker [stage * dp + dp_rank]; empty when the step has no attribution.
std::vector<double> worker_S(const AnalysisResult& r, const std::vector<double>* dp, const std::vector<double>* stage) {
  if (!dp || !stage) return {};
  std::vector<double> out(static_cast<size_t>(r.dp_size * r.pp_size), 1.0);
  for (int s = 0; s < r.pp_size; ++s) {
    for (int d = 0; d < r.dp_size; ++d) {
      const double a = (*dp)[static_cast<size_t>(d)], b = (*stage)[static_cast<size_t>(s)];
      out[static_cast<size_t>(s * r.dp_size + d)] = std::isfinite(a) && std::isfinite(b) ? std::min(a, b) : 1.0;
    }
  }
  return out;
}

std::string worker_name(const AnalysisResult& r, size_t w) {
  return "stage " + std::to_string(w / static_cast<size_t>(r.dp_size)) + " dp " +
         std::to_string(w % static_cast<size_t>(r.dp_size));
}

json ledger_json(const AnalysisResult& r, double sum_time, double sum_ideal) {
  const double gpus = std::max(1, r.job_meta.world_size);
  const double whole = sum_time * gpus, lost = std::max(0.0, sum_time - sum_ideal) * gpus;
  return {{"analyzed_steps", r.steps.size()},
          {"gpus", r.job_meta.world_size},
          {"gpu_seconds", whole},
          {"lost_gpu_seconds", lost},
          {"lost_share", whole > 0 ? lost / whole : 0.0},
          {"by_cause", {{"unattributed", lost}}}};
}

}  // namespace

std::string analyze_html_page(const AnalysisResult& r, const json& lost) {
  const auto base = by_step(r.step_t_base), ideal = by_step(r.step_t_noblk), S = by_step(r.blocking_step_slowdown);
  const auto dp = groups_by_step(r.blocking_by_dp_rank, r.dp_size);
  const auto stage = groups_by_step(r.blocking_by_stage, r.pp_size);
  std::map<int64_t, std::string> top_op;
  if (r.blocking_by_optype) {
    for (const auto& s : r.blocking_by_optype->per_step) {
      if (!s.groups.empty()) top_op[s.step] = s.groups.front().key;
    }
  }
  online::html_report::StepHistory history;
  std::map<std::string, uint64_t> worst;
  double sum_time = 0, sum_ideal = 0;
  for (const int64_t step : r.steps) {
    online::StepVerdict v;
    v.step = step;
    v.analyzed = true;
    v.time_s = value_at(base, step);
    v.ideal_s = value_at(ideal, step);
    v.S = value_at(S, step);
    v.S_null = kNaN;  // no noise model offline
    const auto d = dp.find(step), s = stage.find(step);
    v.worker_S = worker_S(r, d == dp.end() ? nullptr : &d->second, s == stage.end() ? nullptr : &s->second);
    if (!v.worker_S.empty()) {
      const auto w = std::max_element(v.worker_S.begin(), v.worker_S.end()) - v.worker_S.begin();
      ++worst[worker_name(r, static_cast<size_t>(w))];
    }
    const auto op = top_op.find(step);
    history.add(v, op == top_op.end() ? "below --threshold" : op->second);
    if (std::isfinite(v.time_s) && std::isfinite(v.ideal_s)) {
      sum_time += v.time_s;
      sum_ideal += v.ideal_s;
    }
  }
  const double n = static_cast<double>(std::max<size_t>(1, r.steps.size()));
  json report = {{"tool", "straggler-probe analyze (offline): " + r.job_meta.trial_name},
                 {"run", {{"complete", true},
                          {"first_step", r.steps.empty() ? json() : json(r.steps.front())},
                          {"last_step", r.steps.empty() ? json() : json(r.steps.back())},
                          {"note", "the offline what-if analysis of a recorded trace"}}},
                 {"steps_analyzed", r.steps.size()},
                 {"mean_S", r.blocking_slowdown},
                 {"mean_time_s", sum_time / n},
                 {"mean_ideal_s", sum_ideal / n},
                 {"worst", worst},
                 {"lost", lost.is_object() ? lost : ledger_json(r, sum_time, sum_ideal)},
                 {"notes", {{"alarms", "the offline analysis raises no alarms (they are the live probe's)"},
                            {"worst_ranks", "offline, workers are (stage, dp rank) cells of the trace, "
                                            "without hosts or GPUs"}}}};
  json h = history.to_json();
  h["causes_title"] = "Offline the engine names no cause per step: the op type whose real durations alone "
                      "leave the most slowdown, per step.";
  json labels = json::array();
  for (size_t w = 0; w < static_cast<size_t>(r.dp_size * r.pp_size); ++w) labels.push_back(worker_name(r, w));
  if (h["heatmap"]["ranks_per_row"] == 1) h["heatmap"]["row_labels"] = labels;
  return online::html_report_page(report, h);
}

void write_report_html(const std::filesystem::path& path, const std::string& page) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(page.data(), static_cast<std::streamsize>(page.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace sp::cli
