// The analyze-dir subcommand: per-rank summary files -> OnlineAnalyzer -> per-step lines and the
// live path's report. Steps reach the analyzer as a live rank 0 passes them on (rank_pipeline/src/
// analysis_worker.cpp): complete steps only, every rank's summary in rank order, oldest first.
#include "analyze_dir_command.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "exit_codes.h"
#include "output_dir.h"
#include "step_selection.h"
#include "straggler_probe/online/analyzer.h"
#include "summary_dir_reader.h"

namespace sp::cli {
namespace {

namespace fs = std::filesystem;

// "0, 49-50, 77" for a sorted list; at most `max_items` items, then "... (N steps)".
std::string step_ranges(const std::vector<int64_t>& steps, size_t max_items = 8) {
  std::string out;
  size_t items = 0;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    if (items++ == max_items) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(steps[i]);
    if (j > i) out += "-" + std::to_string(steps[j]);
    i = j + 1;
  }
  return out;
}

std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) out += ",... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

void print_line(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  if (line.empty() || line.back() != '\n') std::fputc('\n', stdout);
}

}  // namespace

CLI::App* add_analyze_dir_command(CLI::App& app, AnalyzeDirArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "analyze-dir", "Online analysis, afterwards, of the per-rank summary files (rank<R>.spsum) of a run "
                     "under LD_PRELOAD with STRAGGLER_PROBE_OUT_DIR=DIR");
  cmd->add_option("DIR", args.dir, "Directory of rank<R>.spsum files, one per rank")->required();
  cmd->add_option("--out", args.out, "Report directory (created if missing; default DIR/report)");
  cmd->add_option("--steps", args.steps, "Analyse only these steps, e.g. --steps 12 20-23")->expected(1, -1);
  cmd->add_flag("--quiet,-q", args.quiet, "No per-step lines: only the closing summary and the report line");
  cmd->add_option("--threshold", args.slowdown_threshold,
                  "Steps with a slowdown S below this name no straggler (live: STRAGGLER_PROBE_SLOWDOWN_THRESHOLD)")
      ->default_val(1.05)
      ->check(CLI::Range(1.0, 1e9));
  cmd->add_option("--window", args.window_steps,
                  "Recent steps the ideal durations are estimated over (live: STRAGGLER_PROBE_WINDOW_STEPS)")
      ->default_val(20)
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--summary-interval", args.summary_interval,
                  "A text summary with the S_w heatmap every N steps, as a live run (0: none)")
      ->default_val(50)
      ->check(CLI::NonNegativeNumber);
  return cmd;
}

int run_analyze_dir(const AnalyzeDirArgs& args) {
  const SummaryDirIndex index = index_summary_dir(args.dir);
  for (const std::string& torn : index.torn_tails) spdlog::warn("{}", torn);
  std::vector<int64_t> steps = index.all_steps();
  if (!args.steps.empty()) steps = pick_steps("--steps", args.steps, std::set<int64_t>(steps.begin(), steps.end()));

  // Only complete steps are analysed, as live; the others are counted in one warning.
  std::vector<int64_t> complete, incomplete;
  std::vector<int32_t> first_missing;
  for (const int64_t step : steps) {
    std::vector<int32_t> missing = index.missing_ranks(step);
    if (missing.empty()) {
      complete.push_back(step);
    } else {
      if (incomplete.empty()) first_missing = std::move(missing);
      incomplete.push_back(step);
    }
  }
  if (complete.empty()) {
    throw BadInput(args.dir + ": no step has a summary from every rank (" + std::to_string(incomplete.size()) +
                   " step(s); step " + std::to_string(incomplete.front()) + " lacks rank(s) " +
                   rank_list(first_missing) + ")");
  }
  if (!incomplete.empty()) {
    spdlog::warn("{} step(s) skipped, not analysed: not every rank has a summary of them (steps {}; step {} lacks "
                 "rank(s) {})",
                 incomplete.size(), step_ranges(incomplete), incomplete.front(), rank_list(first_missing));
  }

  const std::string out = args.out.empty() ? (fs::path(args.dir) / "report").string() : args.out;
  create_output_dir(out);
  online::OnlineConfig config;
  config.world_size = index.world_size;
  config.output_dir = out;
  config.summary_interval = args.summary_interval;
  config.thresholds.none_below = args.slowdown_threshold;
  config.ideal.window_steps = args.window_steps;
  if (!args.quiet) config.log_sink = print_line;
  // The analyzer appends to its JSONL (a live run appends across restarts); a rerun here replaces it.
  std::error_code ec;
  fs::remove(fs::path(out) / config.jsonl_name, ec);
  online::OnlineAnalyzer analyzer(config);

  size_t verdicts = 0;
  std::string first_skip;  // "step N: reason" of the first step the analysis skipped
  const auto note = [&](const std::vector<online::StepVerdict>& done) {
    verdicts += done.size();
    for (const auto& v : done) {
      if (!v.analyzed && first_skip.empty()) first_skip = "step " + std::to_string(v.step) + ": " + v.skip_reason;
    }
  };
  for (const int64_t step : complete) {
    for (int32_t r = 0; r < index.world_size; ++r) note(analyzer.add(index.load(r, step)));
  }
  note(analyzer.finish());

  const online::OnlineStats stats = analyzer.stats();
  if (stats.analysis_errors > 0) {
    spdlog::warn("{} error(s) inside the analysis; the last: {}", stats.analysis_errors, stats.last_error);
  }
  if (stats.steps_analyzed == 0) {
    throw BadInput(args.dir + ": no step could be analysed: the analysis skipped all " +
                   std::to_string(stats.steps_skipped) + " (first: " + first_skip + ")");
  }
  if (stats.steps_skipped > 0) {
    spdlog::warn("{} complete step(s) skipped by the analysis (first: {}); see their 'skipped' lines",
                 stats.steps_skipped, first_skip);
  }
  const online::Status status = analyzer.write_report(out);
  if (!status.ok) throw std::runtime_error("report not written to " + out + ": " + status.message);

  // The closing summary, unless the periodic one has just been printed.
  if (args.summary_interval > 0 && (args.quiet || verdicts % static_cast<size_t>(args.summary_interval) != 0)) {
    print_line(analyzer.summary_text());
  }
  print_line("straggler_probe report: " + out + "/report.json " + out + "/timeline.json " + out + "/heatmap.svg " +
             out + "/" + config.jsonl_name);
  return kExitOk;
}

}  // namespace sp::cli
