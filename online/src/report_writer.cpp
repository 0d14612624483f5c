#include "report_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "straggler_probe/whatif/report_heatmap.h"

namespace sp::online {
namespace {

using json = nlohmann::ordered_json;

void mean_grid(const ReportTotals& t, std::vector<double>* grid) {
  const size_t cells = static_cast<size_t>(t.dp_size * t.pp_size);
  std::vector<double> sum(cells, 0.0), n(cells, 0.0);
  for (size_t r = 0; r < t.sum_worker_S.size(); ++r) {
    const size_t c = static_cast<size_t>(t.rank_stage[r] * t.dp_size + t.rank_dp[r]);
    sum[c] += t.sum_worker_S[r] / static_cast<double>(t.worker_steps);
    n[c] += 1;
  }
  grid->assign(cells, 1.0);
  for (size_t c = 0; c < cells; ++c) {
    if (n[c] > 0) (*grid)[c] = sum[c] / n[c];
  }
}

json timeline_json(const std::deque<TimelineStep>& steps) {
  json events = json::array();
  int world = 0;
  for (const TimelineStep& s : steps) world = std::max(world, static_cast<int>(s.rank_dp.size()));
  if (!steps.empty()) {
    const TimelineStep& s = steps.back();
    for (int r = 0; r < world; ++r) {
      const std::string where = " (dp " + std::to_string(s.rank_dp[static_cast<size_t>(r)]) +
                                ", stage " + std::to_string(s.rank_stage[static_cast<size_t>(r)]) + ")";
      for (int ideal = 0; ideal < 2; ++ideal) {
        const int pid = ideal ? world + r : r;
        events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid},
                          {"args", {{"name", "rank " + std::to_string(r) + (ideal ? " ideal" : " real") + where}}}});
        events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid},
                          {"args", {{"sort_index", 2 * r + ideal}}}});
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 0},
                          {"args", {{"name", "host / compute"}}}});
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 1},
                          {"args", {{"name", "communication"}}}});
      }
    }
  }
  // Steps end to end; a step's real and ideal copies share one offset so they line up.
  double offset_us = 0;
  for (const TimelineStep& s : steps) {
    double span = 0;
    for (const TimelineOp& op : s.ops) {
      span = std::max({span, op.real_end, op.ideal_end});
      for (int ideal = 0; ideal < 2; ++ideal) {
        const double b = ideal ? op.ideal_start : op.real_start;
        const double e = ideal ? op.ideal_end : op.real_end;
        events.push_back({{"ph", "X"}, {"name", op.type}, {"pid", ideal ? world + op.rank : op.rank},
                          {"tid", op.comm ? 1 : 0}, {"ts", offset_us + b * 1e6},
                          {"dur", std::max(0.0, e - b) * 1e6}, {"args", {{"step", s.step}}}});
      }
    }
    offset_us += span * 1.1e6;
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace

void ReportTotals::add(const StepVerdict& v) {
  if (!v.analyzed) return;
  ++analyzed;
  sum_S += v.S;
  sum_time += v.time_s;
  sum_ideal += v.ideal_s;
  sum_launch_share += v.launch_share;
  ++causes[std::string(cause_name(v.cause))];
  if (!v.worst.empty()) ++worst[v.worst];
  if (!v.worst_host.empty()) ++worst_hosts[v.worst_host];
  if (sum_worker_S.size() != v.worker_S.size()) {
    // A new layout (first step, or the job changed shape): restart the per-rank totals.
    sum_worker_S.assign(v.worker_S.size(), 0.0);
    worker_steps = 0;
  }
  ++worker_steps;
  for (size_t r = 0; r < v.worker_S.size(); ++r) sum_worker_S[r] += v.worker_S[r];
  rank_dp = v.rank_dp;
  rank_stage = v.rank_stage;
  dp_size = v.dp_size;
  pp_size = v.pp_size;
}

std::string write_report_files(const std::string& dir, const ReportTotals& t, const json& extra,
                               const std::deque<TimelineStep>& timeline) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "cannot create " + dir + ": " + ec.message();
  const std::filesystem::path base(dir);
  std::vector<double> grid;
  if (t.worker_steps > 0) mean_grid(t, &grid);

  json report = extra;
  report["steps_analyzed"] = t.analyzed;
  if (t.analyzed > 0) {
    const double n = static_cast<double>(t.analyzed);
    report["mean_S"] = t.sum_S / n;
    report["mean_time_s"] = t.sum_time / n;
    report["mean_ideal_s"] = t.sum_ideal / n;
    report["mean_launch_share"] = t.sum_launch_share / n;
  }
  report["causes"] = t.causes;
  report["worst"] = t.worst;
  if (!t.worst_hosts.empty()) report["worst_hosts"] = t.worst_hosts;
  json rows = json::array();
  for (int p = 0; p < t.pp_size && !grid.empty(); ++p) {
    rows.push_back(std::vector<double>(grid.begin() + p * t.dp_size, grid.begin() + (p + 1) * t.dp_size));
  }
  report["mean_worker_S"] = {{"dp_size", t.dp_size}, {"pp_size", t.pp_size}, {"rows_by_stage", rows}};

  auto write = [&](const char* name, auto&& body) -> std::string {
    std::ofstream f(base / name, std::ios::binary | std::ios::trunc);
    if (!f) return "cannot write " + (base / name).string();
    body(f);
    f.flush();
    return f ? std::string() : "error writing " + (base / name).string();
  };
  std::string err = write("report.json", [&](std::ostream& o) { o << report.dump(2) << "\n"; });
  if (!err.empty()) return err;
  err = write("timeline.json", [&](std::ostream& o) { o << timeline_json(timeline).dump() << "\n"; });
  if (!err.empty()) return err;
  return write("heatmap.svg", [&](std::ostream& o) {
    whatif::HeatmapInput h;
    h.trial_name = "straggler_probe (live)";
    h.slowdown = t.analyzed ? t.sum_S / static_cast<double>(t.analyzed) : 1.0;
    h.dp_size = t.dp_size;
    h.pp_size = t.pp_size;
    h.worker_slowdown = grid;
    whatif::write_heatmap_svg(h, o);
  });
}

}  // namespace sp::online
