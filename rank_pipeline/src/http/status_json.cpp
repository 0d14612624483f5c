// /status: what an operator (or a script deciding what to drain) reads in one request.
#include <algorithm>
#include <vector>

#include "hang_metrics.h"
#include "metrics_board.h"

namespace sp::rank_pipeline::http {

nlohmann::ordered_json verdict_json(const online::StepVerdict& v) {
  nlohmann::ordered_json j;
  j["step"] = v.step;
  if (!v.analyzed) {
    j["skipped"] = v.skip_reason;
    return j;
  }
  j["time_s"] = v.time_s;
  j["ideal_s"] = v.ideal_s;
  j["S"] = v.S;
  j["cause"] = std::string(online::cause_name(v.cause));
  j["worst"] = v.worst.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(v.worst.text());
  if (!v.worst_host.empty()) j["host"] = v.worst_host;
  if (v.worst_device >= 0) j["gpu"] = v.worst_device;
  j["S_w"] = v.worst_S;
  j["p"] = v.p;
  j["named_by"] = v.named_by;
  return j;
}

nlohmann::ordered_json MetricsBoard::ledger_json() const {
  if (steps_analyzed_ == 0) return "no ledger";
  nlohmann::ordered_json j;
  j["analyzed_steps"] = steps_analyzed_;
  j["gpus"] = gpus_;
  j["gpu_seconds"] = gpu_seconds_;
  j["lost_gpu_seconds"] = lost_gpu_seconds_;
  j["lost_share"] = gpu_seconds_ > 0 ? lost_gpu_seconds_ / gpu_seconds_ : 0.0;
  j["by_cause"] = lost_by_cause_;
  j["by_host"] = lost_by_host_;
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (const auto& [stage, s] : lost_by_stage_) stages[std::to_string(stage)] = s;
  j["by_stage"] = std::move(stages);
  std::vector<std::pair<int, LostEntry>> ranks(lost_by_rank_.begin(), lost_by_rank_.end());
  std::sort(ranks.begin(), ranks.end(),
            [](const auto& a, const auto& b) { return a.second.gpu_s > b.second.gpu_s; });
  if (ranks.size() > 10) ranks.resize(10);
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const auto& [rank, e] : ranks) {
    top.push_back({{"rank", rank}, {"host", e.host}, {"gpu", e.gpu}, {"gpu_seconds", e.gpu_s},
                   {"share", gpu_seconds_ > 0 ? e.gpu_s / gpu_seconds_ : 0.0}});
  }
  j["top_ranks"] = std::move(top);
  j["fixable_gpu_seconds"] = fixable_gpu_seconds_;
  return j;
}

nlohmann::ordered_json MetricsBoard::status(const ProbeHealth& health) const {
  const std::optional<HangBoard::Snapshot> hangs = hang_snapshot();
  const auto now = OpenHang::Clock::now();
  const auto wall_now = std::chrono::system_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::ordered_json j;
  j["job"] = job_;
  j["last_step"] = have_last_ ? nlohmann::ordered_json(last_.step) : nlohmann::ordered_json();
  j["last_step_seen"] = last_step_seen_;
  j["steps_analyzed"] = steps_analyzed_;
  j["steps_skipped"] = steps_skipped_;
  j["paused"] = paused_;
  j["significance"] = significance_;
  j["alarm_significance"] = alarm_significance_;
  nlohmann::ordered_json verdicts = nlohmann::ordered_json::array();
  for (const online::StepVerdict& v : recent_) verdicts.push_back(verdict_json(v));
  j["last_verdicts"] = std::move(verdicts);
  nlohmann::ordered_json alarms = nlohmann::ordered_json::array();
  for (const auto& [key, a] : open_alarms_) {
    nlohmann::ordered_json row{{"target", a.target.text()}, {"cause", std::string(online::cause_name(a.cause))},
                               {"since", a.since}, {"raised_at", a.step}, {"p", a.p}};
    const int rank = a.target.rank_index();
    if (rank >= 0) {
      row["host"] = host_of(rank);
      row["gpu"] = gpu_of(rank);
    }
    alarms.push_back(std::move(row));
  }
  j["open_alarms"] = std::move(alarms);
  j["ledger"] = ledger_json();
  j["exclude_hosts"] = hosts_to_drain_locked();
  if (hangs) j["hang"] = hang_status(*hangs, now, wall_now);
  j["health"] = {{"state", health.state}, {"message", health.message}, {"stats", health.stats}};
  j["config"] = config_;
  return j;
}

}  // namespace sp::rank_pipeline::http
