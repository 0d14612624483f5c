#include "metrics_board.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sp::rank_pipeline::http {

MetricsBoard::MetricsBoard(std::string job, int gpus, nlohmann::ordered_json config)
    : job_(std::move(job)), gpus_(std::max(1, gpus)), config_(std::move(config)) {}

void MetricsBoard::set_rank_table(online::RankTable table) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_ = std::move(table);
  ++generation_;
}

void MetricsBoard::add_verdicts(const std::vector<online::StepVerdict>& verdicts) {
  if (verdicts.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const online::StepVerdict& v : verdicts) add_one(v);
  ++generation_;
}

void MetricsBoard::add_one(const online::StepVerdict& v) {
  recent_.push_back(v);
  recent_.back().rank_dp.clear();  // per-rank vectors: not shown, not kept
  recent_.back().rank_stage.clear();
  recent_.back().worker_S.clear();
  while (recent_.size() > kRecentVerdicts) recent_.pop_front();
  if (!v.analyzed) {
    ++steps_skipped_;
    return;
  }
  ++steps_analyzed_;
  have_last_ = true;
  last_ = recent_.back();
  const std::string cause(online::cause_name(v.cause));
  ++steps_by_cause_[cause];
  add_loss(v);
  for (const online::AlarmEvent& a : v.alarms) note_alarm(a);
}

// The ledger's charging rules (online/src/ledger.h): the whole loss to the step's cause
// ("unattributed" when none was named), and to the named rank, its host and stage only what
// fixing it alone would give back (its what-if share, fix_gain_s).
void MetricsBoard::add_loss(const online::StepVerdict& v) {
  auto finite = [](double x) { return std::isfinite(x) ? x : 0.0; };
  const int gpus = v.rank_dp.empty() ? gpus_ : static_cast<int>(v.rank_dp.size());
  const double lost = std::max(0.0, finite(v.time_s - v.ideal_s)) * gpus;
  gpu_seconds_ += std::max(0.0, finite(v.time_s)) * gpus;
  lost_gpu_seconds_ += lost;
  lost_by_cause_[v.cause == online::Cause::kNone ? "unattributed" : std::string(online::cause_name(v.cause))] += lost;
  if (v.cause == online::Cause::kNone || v.worst.empty()) return;
  const double gain = std::min(lost, std::max(0.0, finite(v.fix_gain_s)) * gpus);
  fixable_gpu_seconds_ += gain;
  const int rank = v.worst.rank_index();
  int stage = v.worst.stage_index();
  std::string host;
  if (rank >= 0) {
    LostEntry& e = lost_by_rank_[rank];
    e.gpu_s += gain;
    e.host = v.worst_host.empty() ? host_of(rank) : v.worst_host;
    e.gpu = v.worst_device >= 0 ? v.worst_device : gpu_of(rank);
    host = e.host;
    if (static_cast<size_t>(rank) < v.rank_stage.size()) stage = v.rank_stage[static_cast<size_t>(rank)];
  }
  if (!host.empty()) lost_by_host_[host] += gain;
  if (stage >= 0) lost_by_stage_[stage] += gain;
}

void MetricsBoard::note_alarm(const online::AlarmEvent& a) {
  const std::string key = a.target.text() + " " + std::string(online::cause_name(a.cause));
  if (a.raised) {
    open_alarms_[key] = a;
  } else {
    open_alarms_.erase(key);
  }
}

void MetricsBoard::note_step_seen(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_step_seen_ = std::max(last_step_seen_, step);
}

void MetricsBoard::set_control_view(bool paused, double significance, double alarm_significance) {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = paused;
  significance_ = significance;
  alarm_significance_ = alarm_significance;
  ++generation_;
}

std::pair<double, double> MetricsBoard::significance() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {significance_, alarm_significance_};
}

void MetricsBoard::show_hangs(std::shared_ptr<const HangBoard> hangs) {
  std::lock_guard<std::mutex> lock(mutex_);
  hangs_ = std::move(hangs);
  ++generation_;
}

// The hang board has a lock of its own, taken here with the board's released: the transport
// thread that writes it never waits for a scrape that holds both.
std::optional<HangBoard::Snapshot> MetricsBoard::hang_snapshot() const {
  std::shared_ptr<const HangBoard> hangs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hangs = hangs_;
  }
  if (!hangs) return std::nullopt;
  return hangs->snapshot();
}

// Both only grow: their sum changes whenever either does.
uint64_t MetricsBoard::generation() const {
  std::shared_ptr<const HangBoard> hangs;
  uint64_t own = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    own = generation_;
    hangs = hangs_;
  }
  return own + (hangs ? hangs->generation() : 0);
}

std::string MetricsBoard::host_of(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return {};
  return ranks_[static_cast<size_t>(rank)].host;
}

int MetricsBoard::gpu_of(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return -1;
  return ranks_[static_cast<size_t>(rank)].device;
}

std::vector<std::string> MetricsBoard::hosts_to_drain() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hosts_to_drain_locked();
}

// A worker alarm names a rank; its host is what a scheduler excludes.
std::vector<std::string> MetricsBoard::hosts_to_drain_locked() const {
  std::set<std::string> hosts;
  for (const auto& [key, a] : open_alarms_) {
    if (a.cause != online::Cause::kWorker) continue;
    const std::string host = host_of(a.target.rank_index());
    if (!host.empty()) hosts.insert(host);
  }
  return {hosts.begin(), hosts.end()};
}

Labels MetricsBoard::labels(Labels extra) const {
  if (job_.empty()) return extra;
  Labels out;
  out.reserve(extra.size() + 1);
  out.emplace_back("job", job_);
  for (auto& label : extra) out.push_back(std::move(label));
  return out;
}

}  // namespace sp::rank_pipeline::http
