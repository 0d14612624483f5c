// OnlineAnalyzer: has each complete step analysed (step_analysis.h: op model -> ideal window ->
// what-if metrics -> cause rules), writes the outputs and reports the steps given up. Which steps
// are complete or given up is StepAssembler's decision (step_assembly.h). Nothing here throws
// out of a public entry point.
#include "straggler_probe/online/analyzer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>

#include "decision/alarms.h"
#include "output/ledger.h"
#include "output/report_writer.h"
#include "step_analysis.h"
#include "straggler_probe/online/step_assembly.h"
#include "output/recap_text.h"
#include "output/verdict_json.h"

namespace sp::online {

struct OnlineAnalyzer::Impl {
  using Assembler = StepAssembler<runtime::StepSummary>;

  explicit Impl(OnlineConfig c)
      : cfg(std::move(c)),
        assembler(AssemblyLimits{std::max(1, cfg.world_size), cfg.incomplete_lag_steps,
                                 cfg.max_pending_steps, std::chrono::milliseconds(0)}),
        steps(cfg) {
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
  Assembler assembler;  // add(): which steps are complete or given up (step_assembly.h)
  StepAnalysis steps;   // the analysis of complete steps and what it keeps between them
  std::deque<StepVerdict> recent;
  uint64_t since_recap = 0;
  ReportTotals totals;
  std::ofstream jsonl;
  nlohmann::ordered_json jsonl_layout;  // the layout record last written (verdict_json.h)
  RankTable ranks;

  void note_error(const std::string& e) { stats.last_error = e; }

  std::vector<StepVerdict> add(runtime::StepSummary s);
  std::vector<StepVerdict> add_step(int64_t step, std::vector<runtime::StepSummary> by_rank);
  std::vector<StepVerdict> skip_steps(int64_t first, int64_t last, const std::string& kind,
                                      const std::string& reason);
  std::string problem_of(const runtime::StepSummary& s) const;
  std::vector<StepVerdict> close_all(std::vector<Assembler::Closed> closed);
  StepVerdict close(Assembler::Closed& c);
  StepVerdict analyze(int64_t step, const std::vector<const runtime::StepSummary*>& by_rank);
  StepVerdict skipped(int64_t step, const std::string& kind, const std::string& reason);
  // print=false: the caller printed the step's line (one line for a range of skipped steps).
  void emit(std::vector<StepVerdict>* out, StepVerdict v, bool print = true);
  template <class F>
  std::vector<StepVerdict> guarded(const char* what, F&& f);
};

namespace {

// A rank in the table: the verdict names its host and GPU.
void place_worst(const RankTable& ranks, StepVerdict* v) {
  const int r = v->worst.rank_index();
  if (r < 0 || r >= static_cast<int>(ranks.size())) return;
  v->worst_host = ranks[static_cast<size_t>(r)].host;
  v->worst_device = ranks[static_cast<size_t>(r)].device;
}

nlohmann::ordered_json rank_table_json(const RankTable& ranks) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    rows.push_back({{"rank", r}, {"host", ranks[r].host}, {"local_rank", ranks[r].local_rank},
                    {"device", ranks[r].device}});
  }
  return rows;
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

std::vector<StepVerdict> OnlineAnalyzer::Impl::add(runtime::StepSummary s) {
  ++stats.summaries_received;
  const int64_t step = s.step;
  if (assembler.is_late(step)) {
    ++stats.summaries_late;
    return {};
  }
  const std::string problem = problem_of(s);
  if (!problem.empty()) {
    ++stats.summaries_rejected;
    note_error("step " + std::to_string(step) + ": " + problem);
    assembler.note_problem(step, problem);
  } else {
    const int rank = s.rank;
    if (assembler.put(step, rank, std::move(s)) == Arrival::kDuplicate) ++stats.summaries_duplicate;
  }
  return close_all(assembler.take_ready());
}

std::string OnlineAnalyzer::Impl::problem_of(const runtime::StepSummary& s) const {
  if (s.world_size != cfg.world_size) {
    return "rank " + std::to_string(s.rank) + " reports world size " +
           std::to_string(s.world_size) + ", expected " + std::to_string(cfg.world_size);
  }
  if (s.rank < 0 || s.rank >= cfg.world_size) {
    return "summary from rank " + std::to_string(s.rank) + " in a world of " +
           std::to_string(cfg.world_size);
  }
  return {};
}

std::vector<StepVerdict> OnlineAnalyzer::Impl::add_step(int64_t step,
                                                        std::vector<runtime::StepSummary> by_rank) {
  stats.summaries_received += by_rank.size();
  Assembler::Closed c;
  c.step = step;
  c.complete = static_cast<int>(by_rank.size()) == cfg.world_size;
  if (!c.complete) {
    c.problem = std::to_string(by_rank.size()) + " summaries for a world of " +
                std::to_string(cfg.world_size);
  }
  for (size_t r = 0; r < by_rank.size() && c.problem.empty(); ++r) {
    const runtime::StepSummary& s = by_rank[r];
    c.problem = problem_of(s);
    if (c.problem.empty() && (s.rank != static_cast<int>(r) || s.step != step)) {
      c.problem = "rank " + std::to_string(r) + "'s summary of step " + std::to_string(step) +
                  " says rank " + std::to_string(s.rank) + ", step " + std::to_string(s.step);
    }
  }
  if (!c.problem.empty()) {
    ++stats.summaries_rejected;
    note_error("step " + std::to_string(step) + ": " + c.problem);
  } else {
    for (runtime::StepSummary& s : by_rank) c.by_rank.emplace_back(std::move(s));
  }
  std::vector<StepVerdict> out;
  emit(&out, close(c));
  return out;
}

std::vector<StepVerdict> OnlineAnalyzer::Impl::skip_steps(int64_t first, int64_t last,
                                                          const std::string& kind,
                                                          const std::string& reason) {
  std::vector<StepVerdict> out;
  if (last < first) return out;
  if (cfg.log_sink) cfg.log_sink(format_skipped_line(first, last, kind + ": " + reason));
  for (int64_t step = first; step <= last; ++step) emit(&out, skipped(step, kind, reason), false);
  return out;
}

std::vector<StepVerdict> OnlineAnalyzer::Impl::close_all(std::vector<Assembler::Closed> closed) {
  std::vector<StepVerdict> out;
  for (Assembler::Closed& c : closed) emit(&out, close(c));
  return out;
}

StepVerdict OnlineAnalyzer::Impl::close(Assembler::Closed& c) {
  const int64_t step = c.step;
  if (!c.problem.empty()) return skipped(step, "malformed", c.problem);
  if (!c.complete) return skipped(step, "incomplete", c.why_incomplete);
  std::vector<const runtime::StepSummary*> by_rank;
  for (const auto& s : c.by_rank) by_rank.push_back(s ? &*s : nullptr);
  try {
    return analyze(step, by_rank);
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

StepVerdict OnlineAnalyzer::Impl::analyze(int64_t step,
                                          const std::vector<const runtime::StepSummary*>& by_rank) {
  const int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  StepAnalysis::Outcome o = steps.analyze(step, by_rank, now_ns, &stats);
  if (!o.skip_kind.empty()) return skipped(step, o.skip_kind, o.skip_reason);
  return std::move(o.verdict);
}

void OnlineAnalyzer::Impl::emit(std::vector<StepVerdict>* out, StepVerdict v, bool print) {
  try {
    place_worst(ranks, &v);
    totals.add(v);
    if (print && cfg.log_sink) {
      cfg.log_sink(format_log_line(v));
      for (const AlarmEvent& e : v.alarms) cfg.log_sink(format_alarm_line(e));
    }
    if (jsonl.is_open()) {
      if (v.analyzed && layout_changed(jsonl_layout, v)) {
        jsonl_layout = layout_to_json(v);
        jsonl << jsonl_layout.dump() << '\n';
      }
      jsonl << verdict_to_json(v).dump() << '\n';
      for (const AlarmEvent& e : v.alarms) jsonl << alarm_event_json(e).dump() << '\n';
      jsonl.flush();
    }
    steps.settle(&stats);  // after the line and the JSONL: what the step owes waits for neither
    recent.push_back(v);
    while (static_cast<int>(recent.size()) > std::max(1, cfg.recap_interval)) recent.pop_front();
    if (cfg.recap_interval > 0 && ++since_recap >= static_cast<uint64_t>(cfg.recap_interval)) {
      since_recap = 0;
      if (cfg.log_sink) cfg.log_sink(format_recap(recent, stats.steps_skipped));
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

// Every public entry point that takes steps: nothing throws out, a failure is counted.
template <class F>
std::vector<StepVerdict> OnlineAnalyzer::Impl::guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    ++stats.analysis_errors;
    note_error(std::string(what) + ": " + e.what());
  } catch (...) {
    ++stats.analysis_errors;
    note_error(std::string(what) + ": unknown exception");
  }
  return {};
}

std::vector<StepVerdict> OnlineAnalyzer::add(runtime::StepSummary summary) {
  if (!impl_) return {};
  return impl_->guarded("add", [&] { return impl_->add(std::move(summary)); });
}

std::vector<StepVerdict> OnlineAnalyzer::add_step(int64_t step,
                                                  std::vector<runtime::StepSummary> by_rank) {
  if (!impl_) return {};
  return impl_->guarded("add_step", [&] { return impl_->add_step(step, std::move(by_rank)); });
}

std::vector<StepVerdict> OnlineAnalyzer::skip_steps(int64_t first, int64_t last,
                                                    const std::string& kind,
                                                    const std::string& reason) {
  if (!impl_) return {};
  return impl_->guarded("skip_steps", [&] { return impl_->skip_steps(first, last, kind, reason); });
}

void OnlineAnalyzer::set_rank_table(RankTable table) {
  if (!impl_) return;
  try {
    table.resize(static_cast<size_t>(impl_->cfg.world_size));
    impl_->ranks = std::move(table);
    if (impl_->jsonl.is_open()) {
      nlohmann::ordered_json record;
      record["rank_table"] = rank_table_json(impl_->ranks);
      impl_->jsonl << record.dump() << '\n';
      impl_->jsonl.flush();
    }
  } catch (const std::exception& e) {
    ++impl_->stats.analysis_errors;
    impl_->note_error(std::string("rank table: ") + e.what());
  }
}

std::vector<StepVerdict> OnlineAnalyzer::finish() {
  if (!impl_) return {};
  return impl_->guarded("finish", [&] { return impl_->close_all(impl_->assembler.take_all()); });
}

std::string OnlineAnalyzer::recap_text() const {
  if (!impl_) return {};
  try {
    return format_recap(impl_->recent, impl_->stats.steps_skipped);
  } catch (...) {
    return {};
  }
}

Status OnlineAnalyzer::write_report(const std::string& dir, const ReportOptions& options) const {
  if (!impl_) return {false, "analyzer failed to initialise"};
  try {
    nlohmann::ordered_json analysis = {{"alarms", impl_->steps.alarms_json()},
                                       {"config", config_json(impl_->cfg)},
                                       {"stats", stats_json(impl_->stats)}};
    if (!impl_->ranks.empty()) analysis["ranks"] = rank_table_json(impl_->ranks);
    // Hosts to drain (ledger.h), written with the other files, empty when no worker alarm is open.
    ReportOptions with_hosts = options;
    with_hosts.files.emplace_back("exclude_hosts.txt", exclude_hosts_text(analysis["alarms"], impl_->ranks));
    const std::string err = write_report_files(dir, impl_->totals, analysis, impl_->steps.timeline(), with_hosts,
                                               TimelineRankLimit{impl_->cfg.timeline_ranks});
    return err.empty() ? Status{} : Status{false, err};
  } catch (const std::exception& e) {
    return {false, e.what()};
  } catch (...) {
    return {false, "unknown exception while writing the report"};
  }
}

std::string OnlineAnalyzer::lost_text() const {
  if (!impl_) return {};
  try {
    return impl_->totals.ledger.text();
  } catch (...) {
    return {};
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

void OnlineAnalyzer::set_significance(double alpha, double alarm_alpha) {
  impl_->cfg.noise.alpha = alpha;
  impl_->cfg.noise.alarm_alpha = alarm_alpha;
  impl_->steps.set_levels(alpha, alarm_alpha);
}

const OnlineConfig& OnlineAnalyzer::config() const {
  static const OnlineConfig kEmpty;
  return impl_ ? impl_->cfg : kEmpty;
}

}  // namespace sp::online
