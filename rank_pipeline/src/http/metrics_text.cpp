// The Prometheus families (names under straggler_probe_, labels job, host, rank, gpu, cause,
// stage, state): what docs/CONFIG.md lists under "Metrics". The hang families: hang_metrics.h.
#include <algorithm>

#include "hang_metrics.h"
#include "metrics_board.h"

namespace sp::rank_pipeline::http {
namespace {

double stat(const ProbeHealth& h, const char* name) {
  const auto it = h.stats.find(name);
  return it == h.stats.end() ? 0.0 : it->second;
}

}  // namespace

std::string MetricsBoard::metrics_text(const ProbeHealth& health) const {
  const std::optional<HangBoard::Snapshot> hangs = hang_snapshot();
  const auto now = OpenHang::Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  Exposition e;
  write_step_families(&e);
  write_ledger_families(&e);
  write_alarm_families(&e);
  if (hangs) write_hang_families(&e, *hangs, now, [this](Labels l) { return labels(std::move(l)); });
  write_probe_families(&e, health);
  return e.text();
}

void MetricsBoard::write_step_families(Exposition* e) const {
  if (have_last_) {
    const Labels none = labels({});
    e->family("straggler_probe_last_step", MetricType::kGauge, "The last analysed step.");
    e->sample(none, static_cast<double>(last_.step));
    e->family("straggler_probe_step_slowdown", MetricType::kGauge,
              "S of the last analysed step: its replayed time over the straggler-free ideal.");
    e->sample(none, last_.S);
    e->family("straggler_probe_step_seconds", MetricType::kGauge, "The last analysed step's measured time.");
    e->sample(none, last_.time_s);
    e->family("straggler_probe_step_ideal_seconds", MetricType::kGauge,
              "The last analysed step's ideal (straggler-free) time.");
    e->sample(none, last_.ideal_s);
    const int rank = last_.worst.rank_index();
    const int stage = last_.worst.stage_index();
    e->family("straggler_probe_step_worst_slowdown", MetricType::kGauge,
              "S_w of the last step's named rank or stage, with its cause (absent: none named).");
    if (rank >= 0 || stage >= 0) {
      Labels l{{"cause", std::string(online::cause_name(last_.cause))}};
      if (rank >= 0) {
        l.push_back({"rank", std::to_string(rank)});
        l.push_back({"host", last_.worst_host.empty() ? host_of(rank) : last_.worst_host});
        l.push_back({"gpu", std::to_string(last_.worst_device >= 0 ? last_.worst_device : gpu_of(rank))});
      } else {
        l.push_back({"stage", std::to_string(stage)});
      }
      e->sample(labels(std::move(l)), last_.worst_S);
    }
  }
  e->family("straggler_probe_steps_total", MetricType::kCounter, "Analysed steps by cause.");
  for (const auto& [cause, n] : steps_by_cause_) e->sample(labels({{"cause", cause}}), static_cast<double>(n));
  e->family("straggler_probe_steps_skipped_total", MetricType::kCounter,
            "Steps not analysed (incomplete, malformed, rank 0 behind, paused).");
  e->sample(labels({}), static_cast<double>(steps_skipped_));
}

void MetricsBoard::write_ledger_families(Exposition* e) const {
  e->family("straggler_probe_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds of the analysed steps (time x the job's GPUs).");
  e->sample(labels({}), gpu_seconds_);
  e->family("straggler_probe_lost_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds lost to stragglers ((time - ideal) x GPUs) by the step's cause "
            "(unattributed: none named).");
  for (const auto& [cause, s] : lost_by_cause_) e->sample(labels({{"cause", cause}}), s);
  e->family("straggler_probe_fixable_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds that fixing each step's named culprit alone would have given back.");
  e->sample(labels({}), fixable_gpu_seconds_);
  e->family("straggler_probe_host_lost_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds fixing the named ranks of this host would have given back.");
  for (const auto& [host, s] : lost_by_host_) e->sample(labels({{"host", host}}), s);
  e->family("straggler_probe_stage_lost_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds fixing the named stage (or the named ranks of it) would have given back.");
  for (const auto& [stage, s] : lost_by_stage_) e->sample(labels({{"stage", std::to_string(stage)}}), s);
  e->family("straggler_probe_rank_lost_gpu_seconds_total", MetricType::kCounter,
            "GPU-seconds fixing this rank would have given back, over the steps that named it.");
  for (const auto& [rank, entry] : lost_by_rank_) {
    e->sample(labels({{"rank", std::to_string(rank)}, {"host", entry.host},
                      {"gpu", std::to_string(entry.gpu)}}),
              entry.gpu_s);
  }
}

void MetricsBoard::write_alarm_families(Exposition* e) const {
  e->family("straggler_probe_alarm_open", MetricType::kGauge,
            "1 for each open alarm, labelled with its target (rank with host and gpu, or stage).");
  for (const auto& [key, a] : open_alarms_) {
    Labels l{{"cause", std::string(online::cause_name(a.cause))}};
    const int rank = a.target.rank_index();
    const int stage = a.target.stage_index();
    if (rank >= 0) {
      l.push_back({"rank", std::to_string(rank)});
      l.push_back({"host", host_of(rank)});
      l.push_back({"gpu", std::to_string(gpu_of(rank))});
    } else if (stage >= 0) {
      l.push_back({"stage", std::to_string(stage)});
    }
    e->sample(labels(std::move(l)), 1.0);
  }
  e->family("straggler_probe_alarms_open", MetricType::kGauge, "Alarms open now.");
  e->sample(labels({}), static_cast<double>(open_alarms_.size()));
}

void MetricsBoard::write_probe_families(Exposition* e, const ProbeHealth& health) const {
  const double analyzed = std::max(1.0, stat(health, "steps_analyzed"));
  e->family("straggler_probe_analysis_seconds_per_step", MetricType::kGauge,
            "Rank 0's analysis thread time per analysed step (mean over the run).");
  e->sample(labels({}), stat(health, "analysis_us_total") / analyzed / 1e6);
  e->family("straggler_probe_report_seconds_total", MetricType::kCounter,
            "Rank 0's CPU time spent rewriting the partial report.");
  e->sample(labels({}), stat(health, "report_us_total") / 1e6);
  e->family("straggler_probe_steps_dropped_total", MetricType::kCounter,
            "Whole steps the probe dropped: rank 0's analysis behind, or given up incomplete.");
  e->sample(labels({{"reason", "analysis-behind"}}), stat(health, "steps_skipped_behind"));
  e->sample(labels({{"reason", "incomplete"}}), stat(health, "steps_incomplete"));
  e->family("straggler_probe_events_dropped_total", MetricType::kCounter,
            "Events rank 0's recording dropped (its per-thread rings full).");
  e->sample(labels({{"rank", "0"}}), stat(health, "runtime_events_dropped"));
  e->family("straggler_probe_summaries_skipped_total", MetricType::kCounter,
            "Whole steps rank 0's runtime queue skipped (its transport fell behind).");
  e->sample(labels({{"rank", "0"}}), stat(health, "runtime_steps_skipped"));
  e->family("straggler_probe_summaries_late_total", MetricType::kCounter,
            "Summaries that reached rank 0 after their step was given up.");
  e->sample(labels({}), stat(health, "summaries_late"));
  e->family("straggler_probe_store_errors_total", MetricType::kCounter, "Failed store operations.");
  e->sample(labels({}), stat(health, "store_errors"));
  e->family("straggler_probe_store_ops_total", MetricType::kCounter, "Store operations made by rank 0.");
  e->sample(labels({}), stat(health, "store_ops"));
  e->family("straggler_probe_up", MetricType::kGauge,
            "1 while the probe runs; 0 once it stepped aside or stopped.");
  e->sample(labels({{"state", health.state}}), health.state == "running" ? 1.0 : 0.0);
  e->family("straggler_probe_paused", MetricType::kGauge, "1 while recording is paused by /control.");
  e->sample(labels({}), paused_ ? 1.0 : 0.0);
  e->family("straggler_probe_significance", MetricType::kGauge, "The per-step significance level in force.");
  e->sample(labels({{"level", "step"}}), significance_);
  e->sample(labels({{"level", "alarm"}}), alarm_significance_);
}

}  // namespace sp::rank_pipeline::http
