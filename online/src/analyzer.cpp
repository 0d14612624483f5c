// OnlineAnalyzer: collects summaries per step, decides when a step is complete (or given up),
// has a complete step analysed (step_analysis.h: op model -> ideal window -> what-if metrics
// -> cause rules) and writes the outputs. Nothing here throws out of a public entry point.
#include "straggler_probe/online/analyzer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "report_writer.h"
#include "step_analysis.h"
#include "summary_text.h"
#include "seq_evidence.h"
#include "verdict_json.h"

namespace sp::online {

struct OnlineAnalyzer::Impl {
  struct Pending {
    std::vector<std::optional<runtime::StepSummary>> by_rank;
    int received = 0;
    std::string malformed;  // first problem found in a summary of this step
  };

  explicit Impl(OnlineConfig c) : cfg(std::move(c)), steps(cfg) {
    cfg.world_size = std::max(1, cfg.world_size);
    if (!cfg.output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(cfg.output_dir, ec);
      const auto path = std::filesystem::path(cfg.output_dir) / cfg.jsonl_name;
      jsonl.open(path, std::ios::out | std::ios::app);
      if (!jsonl) stats.last_error = "cannot open " + path.string() + " for writing";
    }
  }

  OnlineConfig cfg;
  OnlineStats stats;
  std::map<int64_t, Pending> pending;
  std::set<int64_t> closed;  // recently closed steps, to recognise late summaries
  std::optional<int64_t> newest_complete;
  StepAnalysis steps;  // the analysis of complete steps and what it keeps between them
  std::deque<StepVerdict> recent;
  uint64_t since_summary = 0;
  ReportTotals totals;
  std::ofstream jsonl;

  void note_error(const std::string& e) { stats.last_error = e; }

  std::vector<StepVerdict> add(runtime::StepSummary s);
  std::vector<StepVerdict> close_ready(bool all);
  StepVerdict close(int64_t step, Pending& p, bool complete, const std::string& why_incomplete);
  StepVerdict analyze(int64_t step, Pending& p);
  StepVerdict skipped(int64_t step, const std::string& kind, const std::string& reason);
  void emit(std::vector<StepVerdict>* out, StepVerdict v);
  void remember_closed(int64_t step);
};

namespace {

std::string missing_ranks(const std::vector<std::optional<runtime::StepSummary>>& by_rank) {
  std::string out;
  int shown = 0, total = 0;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (by_rank[r]) continue;
    ++total;
    if (shown++ >= 8) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(r);
  }
  if (total > shown) out += ",... (" + std::to_string(total) + " ranks)";
  return out;
}

}  // namespace

StepVerdict OnlineAnalyzer::Impl::skipped(int64_t step, const std::string& kind,
                                          const std::string& reason) {
  StepVerdict v;
  v.step = step;
  v.analyzed = false;
  v.skip_reason = kind + ": " + reason;
  ++stats.steps_skipped;
  ++stats.skip_reasons[kind];
  return v;
}

void OnlineAnalyzer::Impl::remember_closed(int64_t step) {
  closed.insert(step);
  const size_t cap = static_cast<size_t>(std::max(16, 4 * cfg.max_pending_steps));
  while (closed.size() > cap) closed.erase(closed.begin());
}

std::vector<StepVerdict> OnlineAnalyzer::Impl::add(runtime::StepSummary s) {
  ++stats.summaries_received;
  const int64_t step = s.step;
  if (closed.count(step) || (!closed.empty() && step < *closed.begin())) {
    ++stats.summaries_late;
    return {};
  }
  Pending& p = pending[step];
  if (p.by_rank.empty()) p.by_rank.resize(static_cast<size_t>(cfg.world_size));
  std::string problem;
  if (s.world_size != cfg.world_size) {
    problem = "rank " + std::to_string(s.rank) + " reports world size " +
              std::to_string(s.world_size) + ", expected " + std::to_string(cfg.world_size);
  } else if (s.rank < 0 || s.rank >= cfg.world_size) {
    problem = "summary from rank " + std::to_string(s.rank) + " in a world of " +
              std::to_string(cfg.world_size);
  }
  if (!problem.empty()) {
    ++stats.summaries_rejected;
    note_error("step " + std::to_string(step) + ": " + problem);
    if (p.malformed.empty()) p.malformed = problem;
  } else if (p.by_rank[static_cast<size_t>(s.rank)]) {
    ++stats.summaries_duplicate;
  } else {
    p.by_rank[static_cast<size_t>(s.rank)] = std::move(s);
    if (++p.received == cfg.world_size) {
      newest_complete = newest_complete ? std::max(*newest_complete, step) : step;
    }
  }
  return close_ready(false);
}

std::vector<StepVerdict> OnlineAnalyzer::Impl::close_ready(bool all) {
  std::vector<StepVerdict> out;
  const int lag = std::max(1, cfg.incomplete_lag_steps);
  for (auto it = pending.begin(); it != pending.end();) {
    Pending& p = it->second;
    const int64_t step = it->first;
    const bool complete = p.received == cfg.world_size;
    const bool overtaken = newest_complete && *newest_complete - step >= lag;
    const bool too_many = static_cast<int>(pending.size()) > std::max(1, cfg.max_pending_steps);
    if (complete || overtaken || too_many || all) {
      std::string why;
      if (!complete) {
        why = "no summary from rank(s) " + missing_ranks(p.by_rank) +
              (overtaken ? " by step " + std::to_string(*newest_complete)
                         : too_many ? " (more than " + std::to_string(cfg.max_pending_steps) +
                                          " steps pending)"
                                    : " at the end of the run");
      }
      emit(&out, close(step, p, complete, why));
      remember_closed(step);
      it = pending.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

StepVerdict OnlineAnalyzer::Impl::close(int64_t step, Pending& p, bool complete,
                                        const std::string& why_incomplete) {
  if (!p.malformed.empty()) return skipped(step, "malformed", p.malformed);
  if (!complete) return skipped(step, "incomplete", why_incomplete);
  try {
    return analyze(step, p);
  } catch (const std::exception& e) {
    ++stats.analysis_errors;
    note_error("step " + std::to_string(step) + ": " + e.what());
    return skipped(step, "error", e.what());
  } catch (...) {
    ++stats.analysis_errors;
    note_error("step " + std::to_string(step) + ": unknown exception");
    return skipped(step, "error", "unknown exception");
  }
}

StepVerdict OnlineAnalyzer::Impl::analyze(int64_t step, Pending& p) {
  std::vector<const runtime::StepSummary*> by_rank;
  for (const auto& s : p.by_rank) by_rank.push_back(s ? &*s : nullptr);
  const int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  StepAnalysis::Outcome o = steps.analyze(step, by_rank, now_ns, &stats);
  if (!o.skip_kind.empty()) return skipped(step, o.skip_kind, o.skip_reason);
  return std::move(o.verdict);
}

void OnlineAnalyzer::Impl::emit(std::vector<StepVerdict>* out, StepVerdict v) {
  try {
    totals.add(v);
    if (cfg.log_sink) cfg.log_sink(format_log_line(v));
    if (jsonl.is_open()) {
      jsonl << verdict_to_json(v).dump() << '\n';
      jsonl.flush();
    }
    recent.push_back(v);
    while (static_cast<int>(recent.size()) > std::max(1, cfg.summary_interval)) recent.pop_front();
    if (cfg.summary_interval > 0 && ++since_summary >= static_cast<uint64_t>(cfg.summary_interval)) {
      since_summary = 0;
      if (cfg.log_sink) cfg.log_sink(format_summary(recent, stats.steps_skipped));
    }
  } catch (const std::exception& e) {
    ++stats.analysis_errors;
    note_error(std::string("output: ") + e.what());
  }
  out->push_back(std::move(v));
}

OnlineAnalyzer::OnlineAnalyzer(OnlineConfig config) {
  try {
    impl_ = std::make_unique<Impl>(std::move(config));
  } catch (...) {
    impl_.reset();  // the analyzer then does nothing; stats() says so
  }
}

OnlineAnalyzer::~OnlineAnalyzer() = default;

std::vector<StepVerdict> OnlineAnalyzer::add(runtime::StepSummary summary) {
  if (!impl_) return {};
  try {
    return impl_->add(std::move(summary));
  } catch (const std::exception& e) {
    ++impl_->stats.analysis_errors;
    impl_->note_error(std::string("add: ") + e.what());
  } catch (...) {
    ++impl_->stats.analysis_errors;
    impl_->note_error("add: unknown exception");
  }
  return {};
}

std::vector<StepVerdict> OnlineAnalyzer::finish() {
  if (!impl_) return {};
  try {
    return impl_->close_ready(true);
  } catch (const std::exception& e) {
    ++impl_->stats.analysis_errors;
    impl_->note_error(std::string("finish: ") + e.what());
  } catch (...) {
    ++impl_->stats.analysis_errors;
  }
  return {};
}

std::string OnlineAnalyzer::summary_text() const {
  if (!impl_) return {};
  try {
    return format_summary(impl_->recent, impl_->stats.steps_skipped);
  } catch (...) {
    return {};
  }
}

Status OnlineAnalyzer::write_report(const std::string& dir) const {
  if (!impl_) return {false, "analyzer failed to initialise"};
  try {
    const OnlineConfig& c = impl_->cfg;
    const OnlineStats& s = impl_->stats;
    nlohmann::ordered_json extra;
    extra["tool"] = "straggler_probe online analysis";
    extra["config"] = {{"world_size", c.world_size},
                       {"cpu_budget", c.cpu_budget},
                       {"window_steps", c.ideal.window_steps},
                       {"exclude_outliers", c.ideal.exclude_outliers},
                       {"none_below", c.thresholds.none_below},
                       {"ms_min", c.thresholds.ms_min},
                       {"mw_min", c.thresholds.mw_min},
                       {"seq_corr_min", c.thresholds.seq_corr_min},
                       {"fb_corr_min", c.thresholds.fb_corr_min}};
    extra["stats"] = {{"summaries_received", s.summaries_received},
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
    const std::string err = write_report_files(dir, impl_->totals, extra, impl_->steps.timeline());
    return err.empty() ? Status{} : Status{false, err};
  } catch (const std::exception& e) {
    return {false, e.what()};
  } catch (...) {
    return {false, "unknown exception while writing the report"};
  }
}

OnlineStats OnlineAnalyzer::stats() const {
  if (!impl_) {
    OnlineStats s;
    s.last_error = "analyzer failed to initialise";
    return s;
  }
  return impl_->stats;
}

const OnlineConfig& OnlineAnalyzer::config() const {
  static const OnlineConfig kEmpty;
  return impl_ ? impl_->cfg : kEmpty;
}

}  // namespace sp::online
