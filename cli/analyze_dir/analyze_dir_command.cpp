// The analyze-dir subcommand: per-rank summary files -> StepAssembler -> AnalysisDriver (the live
// analysis thread's driver, rank_pipeline/src/pipeline/analysis_worker.cpp) -> per-step lines and the live
// path's report: complete steps only, every rank's summary in rank order, oldest first.
#include "analyze_dir_command.h"

#include <filesystem>
#include <set>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/exit_codes.h"
#include "common/output_dir.h"
#include "common/setting_bounds.h"
#include "common/step_selection.h"
#include "straggler_probe/online/analysis_driver.h"
#include "straggler_probe/online/step_assembly.h"
#include "straggler_probe/output_line.h"
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

// Which steps are complete is the StepAssembler's decision (step_assembly.h), as in a live
// collector: the files are final, so a rank without a summary of a step has moved past it.
struct StepPlan {
  std::vector<int64_t> complete, incomplete;
  std::vector<int> first_missing;  // the ranks the first incomplete step lacks
};

StepPlan plan_steps(const SummaryDirIndex& index, const std::vector<int64_t>& steps) {
  StepPlan plan;
  online::AssemblyLimits limits;
  limits.world_size = index.world_size;
  online::StepAssembler<bool> assembler(limits);
  const auto note = [&plan](std::vector<online::ClosedStep<bool>> closed) {
    for (const auto& c : closed) {
      if (c.complete) {
        plan.complete.push_back(c.step);
        continue;
      }
      if (plan.incomplete.empty()) plan.first_missing = c.missing;
      plan.incomplete.push_back(c.step);
    }
  };
  for (const int64_t step : steps) {
    for (int32_t r = 0; r < index.world_size; ++r) {
      if (index.ranks[static_cast<size_t>(r)].steps.count(step)) {
        assembler.put(step, r, true);
      } else {
        assembler.rank_moved_to(r, step + 1);
      }
    }
    note(assembler.take_ready());
  }
  note(assembler.take_all());
  return plan;
}

online::AnalysisSettings settings_of(const AnalyzeDirArgs& args, int world_size, const std::string& out) {
  online::AnalysisSettings s = args.analysis;
  s.world_size = world_size;
  s.out_dir = out;
  s.log_lines = !args.quiet;
  s.replace_jsonl = true;  // the analyzer appends (a live run does across restarts); a rerun replaces it
  return s;
}

// report.json's account of the input: how many steps the files had, complete or not.
nlohmann::ordered_json summary_files_section(const AnalyzeDirArgs& args, int world_size, const StepPlan& plan) {
  nlohmann::ordered_json first;
  if (!plan.incomplete.empty()) first = {{"step", plan.incomplete.front()}, {"lacks_ranks", plan.first_missing}};
  return {{"dir", args.dir},
          {"world_size", world_size},
          {"steps_complete", plan.complete.size()},
          {"steps_incomplete", plan.incomplete.size()},
          {"first_incomplete", first}};
}

}  // namespace

CLI::App* add_analyze_dir_command(CLI::App& app, AnalyzeDirArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "analyze-dir", "Online analysis, afterwards, of the per-rank summary files (rank<R>.spsum) of a run "
                     "under LD_PRELOAD with STRAGGLER_PROBE_OUT_DIR=DIR");
  cmd->add_option("DIR", args.dir, "Directory of rank<R>.spsum files, one per rank")->required();
  cmd->add_option("--out", args.out, "Report directory (created if missing; default DIR/report)");
  cmd->add_option("--steps", args.steps, "Analyse only these steps, e.g. --steps 12 20-23")->expected(1, -1);
  cmd->add_flag("--quiet,-q", args.quiet, "No per-step lines: only the closing recap and the report line");
  namespace defaults = online::setting_defaults;
  online::AnalysisSettings& a = args.analysis;
  cmd->add_option("--threshold", a.slowdown_threshold,
                  "A user override: steps with a slowdown S below this name no straggler (1: off, the noise model decides; live: STRAGGLER_PROBE_SLOWDOWN_THRESHOLD)")
      ->default_val(defaults::kSlowdownThreshold)
      ->check(at_least(defaults::kSlowdownThresholdLowest));
  cmd->add_option("--window", a.window_steps,
                  "Recent steps the ideal durations are estimated over (live: STRAGGLER_PROBE_WINDOW_STEPS)")
      ->default_val(defaults::kWindowSteps)
      ->check(at_least(defaults::kWindowStepsLowest));
  cmd->add_option("--significance", a.significance,
                  "Per-step level: a step names a culprit only when its test against the noise model gives p "
                  "below this (live: STRAGGLER_PROBE_SIGNIFICANCE)")
      ->default_val(defaults::kSignificance)
      ->check(strictly_between(defaults::kSignificanceAbove, defaults::kSignificanceBelow));
  cmd->add_option("--alarm-significance", a.alarm_significance,
                  "An alarm is raised when its test over the recent steps gives p below this "
                  "(live: STRAGGLER_PROBE_ALARM_SIGNIFICANCE)")
      ->default_val(defaults::kAlarmSignificance)
      ->check(strictly_between(defaults::kAlarmSignificanceAbove, defaults::kAlarmSignificanceBelow));
  cmd->add_option("--recap-interval", a.recap_interval,
                  "A recap (causes, the ledger, the S_w heatmap) every N steps, as a live run (0: none; "
                  "live: STRAGGLER_PROBE_RECAP_INTERVAL)")
      ->default_val(defaults::kRecapInterval)
      ->check(at_least(defaults::kRecapIntervalLowest));
  // The flag's name until the recap was called one: read for one release, with a warning.
  cmd->add_option_function<int>(
         "--summary-interval",
         [&a](const int& n) {
           spdlog::warn("--summary-interval is now --recap-interval; the old name is read until the next release");
           a.recap_interval = n;
         },
         "Former name of --recap-interval")
      ->check(at_least(defaults::kRecapIntervalLowest))
      ->excludes("--recap-interval");
  cmd->add_option("--timeline-ranks", a.timeline_ranks,
                  "Ranks drawn in timeline.json (default: every rank while it stays within 16 MiB, beyond "
                  "that rank 0, the named ranks, each stage's slowest and the slowest / fastest by score; "
                  "live: STRAGGLER_PROBE_TIMELINE_RANKS)")
      ->check(at_least(defaults::kTimelineRanksLowest));
  return cmd;
}

int run_analyze_dir(const AnalyzeDirArgs& args) {
  const SummaryDirIndex index = index_summary_dir(args.dir);
  for (const std::string& torn : index.torn_tails) spdlog::warn("{}", torn);
  std::vector<int64_t> steps = index.all_steps();
  if (!args.steps.empty()) steps = pick_steps("--steps", args.steps, std::set<int64_t>(steps.begin(), steps.end()));

  // Only complete steps are analysed, as live; the others are counted in one warning.
  const StepPlan plan = plan_steps(index, steps);
  if (plan.complete.empty()) {
    throw BadInput(args.dir + ": no step has a summary from every rank (" + std::to_string(plan.incomplete.size()) +
                   " step(s); step " + std::to_string(plan.incomplete.front()) + " lacks rank(s) " +
                   online::rank_list_text(plan.first_missing) + ")");
  }
  if (!plan.incomplete.empty()) {
    spdlog::warn("{} step(s) skipped, not analysed: not every rank has a summary of them (steps {}; step {} lacks "
                 "rank(s) {})",
                 plan.incomplete.size(), step_ranges(plan.incomplete), plan.incomplete.front(),
                 online::rank_list_text(plan.first_missing));
  }

  const std::string out = args.out.empty() ? (fs::path(args.dir) / "report").string() : args.out;
  create_output_dir(out);
  online::AnalysisDriver driver(settings_of(args, index.world_size, out), runtime::print_line,
                            [](const std::string& warning) { spdlog::warn("{}", warning); });
  size_t verdicts = 0;
  std::string first_skip;  // "step N: reason" of the first step the analysis skipped
  for (const int64_t step : plan.complete) {
    std::vector<runtime::StepSummary> by_rank;
    for (int32_t r = 0; r < index.world_size; ++r) by_rank.push_back(index.load(r, step));
    for (const auto& v : driver.analyze_step(step, std::move(by_rank))) {
      ++verdicts;
      if (!v.analyzed && first_skip.empty()) first_skip = "step " + std::to_string(v.step) + ": " + v.skip_reason;
    }
  }
  driver.finish();

  const online::OnlineStats stats = driver.analyzer().stats();
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
  // The closing recap (unless the periodic one has just been printed), then the report line.
  const int every = args.analysis.recap_interval;
  if (every > 0 && (args.quiet || verdicts % static_cast<size_t>(every) != 0)) {
    runtime::print_line(driver.analyzer().recap_text());
  }
  online::ReportOptions report;
  report.sections["summary_files"] = summary_files_section(args, index.world_size, plan);
  const online::Status status = driver.write_report(std::move(report));
  if (!status.ok) throw std::runtime_error("report not written to " + out + ": " + status.message);
  return kExitOk;
}

}  // namespace sp::cli
