#include "straggler_probe/online/analysis_driver.h"

#include <filesystem>

#include "run_health.h"

namespace sp::online {
namespace {

bool has_communication(const std::vector<runtime::StepSummary>& by_rank) {
  for (const runtime::StepSummary& s : by_rank) {
    for (const runtime::OpRecord& op : s.ops) {
      if (op.kind == SP_OP_COLLECTIVE || op.kind == SP_OP_SEND || op.kind == SP_OP_RECV) return true;
    }
  }
  return false;
}

OnlineConfig config_of(const AnalysisSettings& s, LineSink print) {
  OnlineConfig c;
  c.world_size = s.world_size;
  c.output_dir = s.out_dir;
  c.thresholds.none_below = s.slowdown_threshold;
  c.noise.alpha = s.significance;
  c.noise.alarm_alpha = s.alarm_significance;
  c.ideal.window_steps = s.window_steps;
  c.recap_interval = s.recap_interval;
  c.cpu_budget = s.cpu_budget;
  c.hang_after_s = s.hang_after_s;
  c.hang_multiple = s.hang_multiple;
  c.timeline_ranks = s.timeline_ranks;
  c.silent_ranks = s.silent_ranks;
  if (s.log_lines) c.log_sink = std::move(print);
  return c;
}

}  // namespace

struct AnalysisDriver::Impl {
  AnalysisSettings settings;
  LineSink print, warn;
  std::unique_ptr<OnlineAnalyzer> analyzer;
  RunHealth health;
  bool finished = false;

  Impl(AnalysisSettings s, LineSink p, LineSink w)
      : settings(std::move(s)), print(std::move(p)), warn(std::move(w)), health(settings.world_size) {
    if (settings.replace_jsonl && !settings.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(settings.out_dir) / OnlineConfig{}.jsonl_name, ec);
    }
    analyzer = std::make_unique<OnlineAnalyzer>(config_of(settings, print));
  }

  std::vector<StepVerdict> observe(std::vector<StepVerdict> verdicts, const std::string& kind,
                                   bool saw_comm) {
    for (const StepVerdict& v : verdicts) {
      health.observe(v, v.analyzed ? std::string() : kind_of(v, kind), saw_comm);
    }
    check_health(false);
    return verdicts;
  }

  // A skipped verdict's kind: the caller's, or the analyzer's own prefix ("malformed: ...").
  static std::string kind_of(const StepVerdict& v, const std::string& kind) {
    if (!kind.empty()) return kind;
    const size_t colon = v.skip_reason.find(':');
    return colon == std::string::npos ? "other" : v.skip_reason.substr(0, colon);
  }

  void check_health(bool at_end) {
    const std::string warning = health.take_warning(at_end);
    if (!warning.empty() && warn) warn(warning);
  }

  std::string report_line() const {
    const std::string& d = settings.out_dir;
    return "straggler_probe report: " + d + "/report.json " + d + "/report.html " + d +
           "/timeline.json " + d + "/heatmap.svg " + d + "/" + analyzer->config().jsonl_name;
  }
};

AnalysisDriver::AnalysisDriver(AnalysisSettings settings, LineSink print, LineSink warn)
    : impl_(std::make_unique<Impl>(std::move(settings), std::move(print), std::move(warn))) {}

AnalysisDriver::~AnalysisDriver() = default;

std::vector<StepVerdict> AnalysisDriver::analyze_step(int64_t step,
                                                    std::vector<runtime::StepSummary> by_rank) {
  const bool comm = has_communication(by_rank);
  return impl_->observe(impl_->analyzer->add_step(step, std::move(by_rank)), "", comm);
}

std::vector<StepVerdict> AnalysisDriver::skip_steps(int64_t first, int64_t last,
                                                  const std::string& kind,
                                                  const std::string& reason) {
  return impl_->observe(impl_->analyzer->skip_steps(first, last, kind, reason), kind, false);
}

void AnalysisDriver::finish() {
  if (impl_->finished) return;
  impl_->finished = true;
  impl_->observe(impl_->analyzer->finish(), "", false);
  impl_->check_health(true);
}

Status AnalysisDriver::write_report(ReportOptions options) {
  if (impl_->settings.out_dir.empty()) return {false, "no report directory"};
  options.sections["health"] = impl_->health.section(impl_->finished);
  const Status status = impl_->analyzer->write_report(impl_->settings.out_dir, options);
  if (options.final && impl_->print) {
    impl_->print(status.ok ? impl_->report_line() : "straggler_probe report: not written: " + status.message);
    // The last line: what the run lost and to whom (the ledger, src/ledger.h).
    if (const std::string lost = impl_->analyzer->lost_text(); !lost.empty()) impl_->print("straggler_probe " + lost);
  }
  return status;
}

void AnalysisDriver::set_rank_table(RankTable table) { impl_->analyzer->set_rank_table(std::move(table)); }

const OnlineAnalyzer& AnalysisDriver::analyzer() const { return *impl_->analyzer; }

const AnalysisSettings& AnalysisDriver::settings() const { return impl_->settings; }

void AnalysisDriver::set_significance(double significance, double alarm_significance) {
  impl_->settings.significance = significance;
  impl_->settings.alarm_significance = alarm_significance;
  impl_->analyzer->set_significance(significance, alarm_significance);
}

}  // namespace sp::online
