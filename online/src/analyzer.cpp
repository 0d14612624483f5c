// OnlineAnalyzer: collects summaries per step, decides when a step is complete (or given up),
// and runs the analysis of a complete step: op model -> ideal window -> what-if replay ->
// cause rules -> outputs. Nothing here throws out of a public entry point.
#include "straggler_probe/online/analyzer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "cause_rules.h"
#include "format.h"
#include "ideal_window.h"
#include "report_writer.h"
#include "seq_evidence.h"
#include "step_model.h"
#include "straggler_probe/whatif/op_graph.h"
#include "verdict_json.h"
#include "what_if.h"

namespace sp::online {

struct OnlineAnalyzer::Impl {
  struct Pending {
    std::vector<std::optional<runtime::StepSummary>> by_rank;
    int received = 0;
    std::string malformed;  // first problem found in a summary of this step
  };

  explicit Impl(OnlineConfig c)
      : cfg(std::move(c)), window(cfg.ideal), seq(cfg.ideal.window_steps) {
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
  IdealWindow window;
  SeqWindow seq;
  std::deque<int> worst_history;  // per analysed step: worst rank, or -1 when not straggling
  std::deque<StepVerdict> recent;
  uint64_t since_summary = 0;
  ReportTotals totals;
  std::deque<TimelineStep> timeline;
  std::ofstream jsonl;
  RankTable ranks;

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

// "rank:N" with N in the table: the verdict names its host and GPU.
void place_worst(const RankTable& ranks, StepVerdict* v) {
  if (v->worst.rfind("rank:", 0) != 0) return;
  const long r = std::strtol(v->worst.c_str() + 5, nullptr, 10);
  if (r < 0 || r >= static_cast<long>(ranks.size())) return;
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

void OnlineAnalyzer::Impl::emit(std::vector<StepVerdict>* out, StepVerdict v) {
  try {
    place_worst(ranks, &v);
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
                      {"last_error", s.last_error}};
    if (!impl_->ranks.empty()) extra["ranks"] = rank_table_json(impl_->ranks);
    const std::string err = write_report_files(dir, impl_->totals, extra, impl_->timeline);
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
