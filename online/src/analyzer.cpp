// OnlineAnalyzer: runs the analysis of each complete step (op model -> ideal window -> what-if
// replay -> cause rules -> outputs) and reports the steps given up. Which steps are complete or
// given up is StepAssembler's decision (step_assembly.h). Nothing here throws out of a public
// entry point.
#include "straggler_probe/online/analyzer.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cause_rules.h"
#include "format.h"
#include "ideal_window.h"
#include "report_writer.h"
#include "seq_evidence.h"
#include "step_model.h"
#include "straggler_probe/online/step_assembly.h"
#include "straggler_probe/whatif/op_graph.h"
#include "verdict_json.h"
#include "what_if.h"

namespace sp::online {

struct OnlineAnalyzer::Impl {
  using Assembler = StepAssembler<runtime::StepSummary>;

  explicit Impl(OnlineConfig c)
      : cfg(std::move(c)),
        assembler(AssemblyLimits{std::max(1, cfg.world_size), cfg.incomplete_lag_steps,
                                 cfg.max_pending_steps, std::chrono::milliseconds(0)}),
        window(cfg.ideal), seq(cfg.ideal.window_steps) {
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
  IdealWindow window;
  SeqWindow seq;
  std::deque<int> worst_history;  // per analysed step: worst rank, or -1 when not straggling
  std::deque<StepVerdict> recent;
  uint64_t since_summary = 0;
  ReportTotals totals;
  std::deque<TimelineStep> timeline;
  std::ofstream jsonl;

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
  std::string error;
  std::optional<StepModel> model = build_step_model(by_rank, ModelOptions{}, &error);
  if (!model) return skipped(step, "malformed", error);
  stats.ops_clamped += model->clamped;
  stats.ops_ignored += model->ignored;
  stats.ops_superseded += model->superseded;
  stats.ops_kept_without_better_source += model->kept_alone;
  for (const auto& [what, n] : model->superseded_by) stats.ops_superseded_by[what] += n;
  for (const std::string& note : model->notes) note_error("step " + std::to_string(step) + ": " + note);

  window.push(collect_samples(*model));
  seq.push(*model);
  WhatIfResult w;
  try {
    w = run_what_if(*model, window.ideals(*model), cfg.thresholds.worker_top_fraction,
                    cfg.timeline_steps > 0);
  } catch (const whatif::GraphError& e) {
    window.pop_back();
    seq.pop_back();
    return skipped(step, "malformed", e.what());
  }

  StepVerdict v;
  v.step = step;
  v.analyzed = true;
  v.time_s = model->time_s;
  v.replay_s = w.T_real;
  v.nodelay_s = w.T_nodelay;
  v.ideal_s = w.T_ideal;
  v.S = w.S();
  v.launch_share = w.launch_share();
  v.fidelity_err = model->time_s > 0 ? std::fabs(w.T_real - model->time_s) / model->time_s : 0.0;
  v.dp_size = model->dp_size;
  v.pp_size = model->pp_size;
  v.rank_dp = model->rank_dp;
  v.rank_stage = model->rank_stage;
  v.worker_S = w.worker_S;
  v.dp_S = w.dp_S;
  v.stage_S = w.stage_S;
  v.op_S = w.op_S;
  std::stable_sort(v.op_S.begin(), v.op_S.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  v.M_S = w.M_S;
  v.M_W = w.M_W;
  v.top_workers = w.top_workers;

  // Persistence of the worst rank over the window (for the worker vs scatter distinction).
  worst_history.push_back(v.S >= cfg.thresholds.none_below ? worst_rank(w) : -1);
  while (static_cast<int>(worst_history.size()) > std::max(1, cfg.ideal.window_steps)) worst_history.pop_front();
  CauseInput in;
  in.model = &*model;
  in.what_if = &w;
  in.seq = seq.evidence();
  in.worst_count.assign(static_cast<size_t>(model->world), 0);
  for (int r : worst_history) {
    if (r >= 0 && r < model->world) {
      ++in.worst_count[static_cast<size_t>(r)];
      ++in.straggling_steps;
    }
  }
  v.seq_corr = in.seq.seq_corr;
  v.fb_corr = in.seq.fb_corr;
  const CauseResult c = classify(in, cfg.thresholds);
  v.cause = c.cause;
  v.worst = c.worst;
  v.worst_S = c.worst_S;
  v.top_op = c.top_op;
  v.evidence = c.evidence;
  ++stats.steps_analyzed;

  if (cfg.timeline_steps > 0) {
    TimelineStep ts;
    ts.step = step;
    ts.rank_dp = model->rank_dp;
    ts.rank_stage = model->rank_stage;
    for (size_t i = 0; i < model->nodes.size(); ++i) {
      const Node& n = model->nodes[i];
      if (n.role == NodeRole::kMarker || n.role == NodeRole::kStart) continue;
      const LogicalOp& op = model->ops[static_cast<size_t>(n.logical)];
      ts.ops.push_back({n.rank, model->type_names[static_cast<size_t>(op.type)],
                        n.role == NodeRole::kComm, w.real_start[i], w.real_end[i],
                        w.ideal_start[i], w.ideal_end[i]});
    }
    timeline.push_back(std::move(ts));
    while (static_cast<int>(timeline.size()) > cfg.timeline_steps) timeline.pop_front();
  }
  return v;
}

void OnlineAnalyzer::Impl::emit(std::vector<StepVerdict>* out, StepVerdict v, bool print) {
  try {
    totals.add(v);
    if (print && cfg.log_sink) cfg.log_sink(format_log_line(v));
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

std::vector<StepVerdict> OnlineAnalyzer::finish() {
  if (!impl_) return {};
  return impl_->guarded("finish", [&] { return impl_->close_all(impl_->assembler.take_all()); });
}

std::string OnlineAnalyzer::summary_text() const {
  if (!impl_) return {};
  try {
    return format_summary(impl_->recent, impl_->stats.steps_skipped);
  } catch (...) {
    return {};
  }
}

Status OnlineAnalyzer::write_report(const std::string& dir, const ReportOptions& options) const {
  if (!impl_) return {false, "analyzer failed to initialise"};
  try {
    const nlohmann::ordered_json analysis = {{"config", config_json(impl_->cfg)},
                                             {"stats", stats_json(impl_->stats)}};
    const std::string err = write_report_files(dir, impl_->totals, analysis, impl_->timeline, options);
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
