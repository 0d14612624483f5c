// The analyze subcommand: the whole offline pipeline, from trace file to the five outputs and
// the printed summary.
#include "analyze_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "exit_codes.h"
#include "output_dir.h"
#include "parquet_bridge.h"
#include "step_selection.h"
#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/report_heatmap.h"
#include "straggler_probe/whatif/report_summary.h"
#include "straggler_probe/whatif/report_timeline.h"
#include "straggler_probe/whatif/result_json.h"
#include "straggler_probe/whatif/trace_loader.h"

namespace sp::cli {
namespace {

namespace fs = std::filesystem;
using namespace sp::whatif;

TraceTable load_trace(const std::string& path, const JobMeta& meta) {
  if (is_parquet_file(path)) {
    const ConvertedTrace csv = convert_parquet_to_csv(path);
    // Errors then name the Parquet file; the converter keeps row order, so line = row + 2.
    return parse_trace_csv(read_file_maybe_gzip(csv.csv_path()), path + " (as CSV)", meta);
  }
  return load_trace_csv(path, meta);
}

// --steps against the trace's steps (nullopt: all).
std::optional<std::vector<int64_t>> select_steps(const AnalyzeArgs& args, const TraceTable& trace) {
  if (args.steps.empty()) return std::nullopt;
  return pick_steps("--steps", args.steps, std::set<int64_t>(trace.step.begin(), trace.step.end()));
}

// The steps the analysis will report: the selected ones (already those in the trace), else all.
std::vector<int64_t> analysed_steps(const std::optional<std::vector<int64_t>>& selected, const TraceTable& trace) {
  if (selected) return *selected;
  const std::set<int64_t> all(trace.step.begin(), trace.step.end());
  return {all.begin(), all.end()};
}

// --timeline-steps against the analysed steps, else the default (all that fit).
std::vector<int64_t> select_timeline_steps(const AnalyzeArgs& args, const TraceTable& trace,
                                           const std::vector<int64_t>& analysed) {
  if (args.timeline_steps.empty()) return default_timeline_steps(trace, analysed);
  return pick_steps("--timeline-steps", args.timeline_steps, std::set<int64_t>(analysed.begin(), analysed.end()));
}

// --out may not exist yet (it is created once every check has passed), but must not be a file.
void check_output_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw BadInput("--out: cannot create directory " + dir + ": it exists and is not a directory");
  }
}

std::ofstream open_output(const fs::path& p) {
  std::ofstream out(p, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return out;
}

void write_timeline(const fs::path& path, const TraceTable& trace, const JobMeta& meta, const AnalysisResult& r,
                    std::vector<int64_t> steps) {
  TimelineInput in;
  in.trace = &trace;
  in.meta = &meta;
  in.real_start = r.row_real_start;
  in.real_end = r.row_real_end;
  in.ideal_start = r.row_ideal_start;
  in.ideal_end = r.row_ideal_end;
  in.steps = std::move(steps);
  std::ofstream out = open_output(path);
  write_timeline_json(in, out);
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void write_heatmap(const fs::path& path, const AnalysisResult& r) {
  HeatmapInput in{r.job_meta.trial_name, r.blocking_slowdown, r.dp_size, r.pp_size, r.worker_slowdown};
  std::ofstream out = open_output(path);
  write_heatmap_svg(in, out);
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

std::vector<GroupSlowdown> groups_of(const std::optional<Decomposition>& d) {
  std::vector<GroupSlowdown> out;
  if (d) {
    for (const auto& g : d->overall) out.push_back({g.key, g.value});
  }
  return out;
}

SummaryInput summary_input(const AnalysisResult& r, const SlowdownExplanation& ms,
                           const std::optional<SlowdownExplanation>& mw) {
  SummaryInput s;
  s.trial_name = r.job_meta.trial_name;
  s.steps = r.steps.size();
  s.slowdown = r.blocking_slowdown;
  s.launch_slowdown = r.launch_slowdown;
  s.pp_size = r.pp_size;
  s.by_stage = groups_of(r.blocking_by_stage);
  s.by_dp_rank = groups_of(r.blocking_by_dp_rank);
  s.by_optype = groups_of(r.blocking_by_optype);
  if (r.blocking_by_dp_rank) {
    for (const auto& step : r.blocking_by_dp_rank->per_step) {
      if (!step.groups.empty()) s.per_step_worst_dp_rank.push_back(step.groups.front().key);
    }
  }
  if (!r.worker_slowdown.empty()) {
    const auto it = std::max_element(r.worker_slowdown.begin(), r.worker_slowdown.end());
    const auto w = static_cast<int>(it - r.worker_slowdown.begin());
    s.worst_worker_stage = w / r.dp_size;
    s.worst_worker_dp = w % r.dp_size;
    s.worst_worker_slowdown = *it;
  }
  s.m_s = ms.rem;
  if (mw) s.m_w = mw->rem;
  return s;
}

}  // namespace

CLI::App* add_analyze_command(CLI::App& app, AnalyzeArgs& args) {
  CLI::App* cmd = app.add_subcommand("analyze", "What-if analysis of one job's trace");
  cmd->add_option("--trace", args.trace, "Trace: CSV, gzip'd CSV or Parquet (detected by content)")->required();
  cmd->add_option("--meta", args.meta, "The job's meta.yaml")->required();
  cmd->add_option("--out", args.out, "Output directory (created if missing)")->required();
  cmd->add_option("--steps", args.steps, "Analyse only these steps, e.g. --steps 12 20-23")->expected(1, -1);
  cmd->add_option("--timeline-steps", args.timeline_steps,
                  "Steps drawn in timeline.json (default: the analysed steps, up to 1M events)")
      ->expected(1, -1);
  cmd->add_option("--threshold", args.threshold, "Attribute a slowdown only when at least this large")
      ->default_val(1.03);
  return cmd;
}

int run_analyze(const AnalyzeArgs& args) {
  // Every option is checked before anything is written: a rejected option leaves --out as it was.
  if (!std::isfinite(args.threshold) || args.threshold <= 0) {
    throw BadInput("--threshold: must be a positive number, got " + std::to_string(args.threshold));
  }
  check_output_dir(args.out);
  const JobMeta meta = load_meta(args.meta);
  const TraceTable trace = load_trace(args.trace, meta);
  AnalyzeOptions options;
  options.steps = select_steps(args, trace);
  options.decompose_threshold = args.threshold;
  const std::vector<int64_t> timeline_steps = select_timeline_steps(args, trace, analysed_steps(options.steps, trace));

  Analysis analysis(trace, meta, options);
  const AnalysisResult& r = analysis.result();
  const SlowdownExplanation ms = analysis.compute_ms();
  const std::optional<SlowdownExplanation> mw = analysis.compute_mw();

  const fs::path out_dir(args.out);
  create_output_dir(args.out);
  write_json_file(result_to_json(r), (out_dir / "result.json").string(), 2);
  write_json_file(ms_to_json(ms), (out_dir / "ms.json").string(), 4);
  if (mw) {
    write_json_file(mw_to_json(*mw), (out_dir / "mw.json").string(), 4);
  } else {
    // The artifact writes no M_W when S_w is undefined; say so rather than leave a stale file.
    std::error_code ec;
    fs::remove(out_dir / "mw.json", ec);
    spdlog::warn("M_W not computed: the slowdown is below --threshold {}, so there is no per-worker attribution",
                 args.threshold);
  }
  write_timeline(out_dir / "timeline.json", trace, meta, r, timeline_steps);
  write_heatmap(out_dir / "heatmap.svg", r);

  std::fputs(format_summary(summary_input(r, ms, mw)).c_str(), stdout);
  std::printf("  outputs           %s/{result.json, ms.json,%s timeline.json, heatmap.svg}\n", args.out.c_str(),
              mw ? " mw.json," : "");
  return kExitOk;
}

}  // namespace sp::cli
