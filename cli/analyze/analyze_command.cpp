// The analyze subcommand: the whole offline pipeline, from trace file to the five outputs and
// the printed overview.
#include "analyze_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "analyze_html.h"
#include "analyze_ledger.h"
#include "analyze_outputs.h"
#include "common/exit_codes.h"
#include "common/output_dir.h"
#include "parquet_bridge.h"
#include "common/process_memory.h"
#include "common/step_selection.h"
#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/report_overview.h"
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
std::optional<std::vector<int64_t>> select_steps(const AnalyzeArgs& args, const std::set<int64_t>& in_trace) {
  if (args.steps.empty()) return std::nullopt;
  return pick_steps("--steps", args.steps, in_trace);
}

// The steps the analysis will report: the selected ones (already those in the trace), else all.
std::vector<int64_t> analysed_steps(const std::optional<std::vector<int64_t>>& selected,
                                    const std::set<int64_t>& in_trace) {
  if (selected) return *selected;
  return {in_trace.begin(), in_trace.end()};
}

// --timeline-steps against the analysed steps; nullopt when not given (the default then
// depends on the analysis: see default_steps_drawn).
std::optional<std::vector<int64_t>> select_timeline_steps(const AnalyzeArgs& args,
                                                          const std::vector<int64_t>& analysed) {
  if (args.timeline_steps.empty()) return std::nullopt;
  return pick_steps("--timeline-steps", args.timeline_steps, std::set<int64_t>(analysed.begin(), analysed.end()));
}

// Without --timeline-steps: every analysed step when they fit in kAnalyzeTimelineEvents, else
// the slowest steps (by S) that fit, where the stragglers show.
std::vector<int64_t> default_steps_drawn(const TraceTable& trace, const AnalysisResult& r) {
  std::vector<int64_t> slowest_first;
  for (const StepValue& sv : r.blocking_step_slowdown) slowest_first.push_back(sv.step);
  return default_timeline_steps(trace, r.steps, kAnalyzeTimelineEvents, slowest_first);
}

// --out may not exist yet (it is created once every check has passed), but must not be a file.
void check_output_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw BadInput("--out: cannot create directory " + dir + ": it exists and is not a directory");
  }
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
  std::error_code size_unknown;
  if (const auto bytes = fs::file_size(args.trace, size_unknown); !size_unknown) reserve_heap_for_trace(bytes);
  const JobMeta meta = load_meta(args.meta);
  const TraceTable trace = load_trace(args.trace, meta);
  AnalyzeOptions options;
  const std::set<int64_t> steps_in_trace = distinct_steps(trace);
  options.steps = select_steps(args, steps_in_trace);
  options.decompose_threshold = args.threshold;
  const std::optional<std::vector<int64_t>> chosen_timeline_steps =
      select_timeline_steps(args, analysed_steps(options.steps, steps_in_trace));

  Analysis analysis(trace, meta, options);
  const AnalysisResult& r = analysis.result();
  std::vector<int64_t> timeline_steps = chosen_timeline_steps ? *chosen_timeline_steps : default_steps_drawn(trace, r);
  const fs::path out_dir(args.out);
  create_output_dir(args.out);
  // The timeline is the largest output (SE: 30 MB, 214k events): it is written on a thread of
  // its own while M_S and M_W are computed and the other outputs written. It reads only the
  // trace and the result, which nothing changes from here on.
  std::future<void> timeline = std::async(std::launch::async, [&] {
    write_timeline(out_dir / "timeline.json", trace, meta, r, std::move(timeline_steps));
  });
  const SlowdownExplanation ms = analysis.compute_ms();
  const std::optional<SlowdownExplanation> mw = analysis.compute_mw();

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
  write_heatmap(out_dir / "heatmap.svg", r);
  const nlohmann::ordered_json lost = offline_ledger_json(r, ms, mw);  // the ledger (analyze_ledger.h)
  write_json_file({{"lost", lost}}, (out_dir / "lost.json").string(), 2);
  write_report_html(out_dir / "report.html", analyze_html_page(r, lost));
  timeline.get();

  std::fputs(format_overview(overview_input(r, ms, mw)).c_str(), stdout);
  std::printf("  outputs           %s/{result.json, ms.json,%s timeline.json, heatmap.svg, report.html}\n", args.out.c_str(),
              mw ? " mw.json," : "");
  std::printf("straggler_probe %s (%s/lost.json)\n", offline_ledger_line(lost).c_str(), args.out.c_str());
  return kExitOk;
}

}  // namespace sp::cli
