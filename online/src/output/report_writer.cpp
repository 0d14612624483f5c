#include "report_writer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "straggler_probe/online/html_report.h"
#include "straggler_probe/whatif/report_heatmap.h"

namespace sp::online {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

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

std::string steps_text(const ReportTotals& t) {
  if (t.closed == 0) return "none yet";
  return std::to_string(t.first_step) + "-" + std::to_string(t.last_step);
}

// report.json's "run": whether this is the final report or one written while the job ran.
json run_json(const ReportTotals& t, bool final) {
  json run;
  run["complete"] = final;
  run["first_step"] = t.closed ? json(t.first_step) : json();
  run["last_step"] = t.closed ? json(t.last_step) : json();
  run["written_unix_s"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  run["note"] =
      final ? "the final report, written when the probe shut down"
            : "written while the job ran, every few steps; a job that ends normally replaces it "
              "with the final report (complete: true), so complete: false once the job is over "
              "means it was cut short (ended by a signal such as SIGTERM or SIGKILL, or crashed) "
              "after the last step listed here";
  return run;
}

std::string heatmap_svg(const ReportTotals& t, const std::vector<double>& grid, bool final) {
  whatif::HeatmapInput h;
  h.trial_name = final ? "straggler_probe (live)"
                       : "straggler_probe (live), partial: steps " + steps_text(t) +
                             ", written while the job ran";
  h.slowdown = t.analyzed ? t.sum_S / static_cast<double>(t.analyzed) : 1.0;
  h.dp_size = t.dp_size;
  h.pp_size = t.pp_size;
  h.worker_slowdown = grid;
  std::ostringstream o;
  whatif::write_heatmap_svg(h, o);
  return o.str();
}

json aggregates_json(const ReportTotals& t, const std::vector<double>& grid) {
  json report;
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
  report["lost"] = t.ledger.to_json();
  return report;
}

}  // namespace

void ReportTotals::add(const StepVerdict& v) {
  first_step = closed ? std::min(first_step, v.step) : v.step;
  last_step = closed ? std::max(last_step, v.step) : v.step;
  ++closed;
  history.add(v);
  if (!v.analyzed) return;
  ledger.add(v);
  ++analyzed;
  sum_S += v.S;
  sum_time += v.time_s;
  sum_ideal += v.ideal_s;
  sum_launch_share += v.launch_share;
  ++causes[std::string(cause_name(v.cause))];
  if (!v.worst.empty()) ++worst[v.worst.text()];
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

json config_json(const OnlineConfig& c) {
  return {{"world_size", c.world_size},
          {"cpu_budget", c.cpu_budget},
          {"window_steps", c.ideal.window_steps},
          {"exclude_outliers", c.ideal.exclude_outliers},
          {"none_below", c.thresholds.none_below},
          {"noise_model", c.noise.enabled},
          {"alpha", c.noise.alpha},
          {"alarm_alpha", c.noise.alarm_alpha},
          {"timeline_ranks", c.timeline_ranks},
          {"alarm_short_steps", c.noise.alarm_short_steps},
          {"alarm_long_steps", c.noise.alarm_long_steps},
          {"calibration_steps", c.noise.calibration_steps},
          {"min_slowdown", c.noise.min_slowdown},
          {"ms_min", c.thresholds.ms_min},
          {"mw_min", c.thresholds.mw_min},
          {"seq_corr_min", c.thresholds.seq_corr_min},
          {"fb_corr_min", c.thresholds.fb_corr_min}};
}

json stats_json(const OnlineStats& s) {
  return {{"summaries_received", s.summaries_received},
          {"summaries_rejected", s.summaries_rejected},
          {"summaries_late", s.summaries_late},
          {"summaries_duplicate", s.summaries_duplicate},
          {"steps_analyzed", s.steps_analyzed},
          {"steps_skipped", s.steps_skipped},
          {"analysis_errors", s.analysis_errors},
          {"ops_clamped", s.ops_clamped},
          {"ops_ignored", s.ops_ignored},
          {"ops_superseded", s.ops_superseded},
          {"ops_superseded_by", s.ops_superseded_by},
          {"ops_kept_without_better_source", s.ops_kept_without_better_source},
          {"skip_reasons", s.skip_reasons},
          {"analysis_cpu_s", s.analysis_cpu_s},
          {"analysis_cpu_max_s", s.analysis_cpu_max_s},
          {"last_error", s.last_error}};
}

std::string write_file_atomically(const std::string& path, const std::string& content) {
  const fs::path target(path);
  // Per process: two processes that both believe they are rank 0 never share a temporary file.
  std::string tmp_name = ".";
  tmp_name += target.filename().string();
  tmp_name += '.';
  tmp_name += std::to_string(::getpid());
  tmp_name += ".tmp";
  const fs::path tmp = target.parent_path() / tmp_name;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return "cannot write " + tmp.string();
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return "error writing " + tmp.string();
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return "cannot replace " + target.string() + ": " + ec.message();
  }
  return {};
}

std::string write_report_files(const std::string& dir, const ReportTotals& t, const json& analysis,
                               const std::deque<TimelineStep>& timeline,
                               const ReportOptions& options, const TimelineRankLimit& timeline_limit) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir + ": " + ec.message();
  const fs::path base(dir);
  std::vector<double> grid;
  if (t.worker_steps > 0) mean_grid(t, &grid);

  const json run = run_json(t, options.final);
  json report;
  report["tool"] = "straggler_probe online analysis";
  report["run"] = run;
  report.update(aggregates_json(t, grid));
  report.update(analysis);
  if (options.sections.is_object()) report.update(options.sections);

  // report.json last: once it says which steps it covers, the other files cover them too.
  for (const auto& [name, content] : options.files) {
    if (std::string err = write_file_atomically((base / name).string(), content); !err.empty()) return err;
  }
  std::string err;
  if (options.write_timeline) {
    err = write_file_atomically((base / "timeline.json").string(), timeline_json_text(timeline, run, timeline_limit));
  }
  if (err.empty()) err = write_file_atomically((base / "heatmap.svg").string(), heatmap_svg(t, grid, options.final));
  if (err.empty()) err = write_file_atomically((base / "report.html").string(), html_report_page(report, t.history.to_json()));
  if (err.empty()) err = write_file_atomically((base / "report.json").string(), report.dump(2) + "\n");
  return err;
}

}  // namespace sp::online
