// What rank 0's analysis publishes for the metrics server: written by the analysis thread after
// each step (one short lock per step, never the training thread's), read by the server thread
// when a scrape or /status comes. Bounded: the last kRecentVerdicts verdicts, one entry per
// cause, host, rank and open alarm (a job has as many of those as ranks, at most).
//
// GPU-seconds lost follow the ledger (online/src/ledger.h, whose totals report.json's "lost"
// has): per analysed step max(0, time - ideal) x the job's GPUs (its ranks), whole under the
// step's cause ("unattributed" when none was named); the named rank, its host and its stage are
// charged what fixing it alone would give back (the verdict's fix_gain_s x GPUs).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exposition.h"
#include "hang/hang_board.h"
#include "straggler_probe/online/rank_table.h"
#include "straggler_probe/online/verdict.h"

namespace sp::rank_pipeline::http {

// The probe's own cost and health, read from the pipeline when a scrape comes (RankPipeline
// fills it: its counters are atomics).
struct ProbeHealth {
  std::string state = "running";  // RankPipelineState's name
  std::string message;
  std::map<std::string, double> stats;  // RankPipeline::stats()
};

struct LostEntry {
  double gpu_s = 0;
  std::string host;
  int gpu = -1;
};

class MetricsBoard {
 public:
  static constexpr size_t kRecentVerdicts = 16;

  // job: SLURM_JOB_ID / TORCHELASTIC_RUN_ID ("" : none); config: the settings for /status.
  MetricsBoard(std::string job, int gpus, nlohmann::ordered_json config);

  void set_rank_table(online::RankTable table);
  // Verdicts of analysed and skipped steps, in step order.
  void add_verdicts(const std::vector<online::StepVerdict>& verdicts);
  // The step the analysis thread took last, analysed or not (/status: while paused it shows how
  // far the job got).
  void note_step_seen(int64_t step);
  // Control state shown by /status and /metrics (control.h changes it).
  void set_control_view(bool paused, double significance, double alarm_significance);
  std::pair<double, double> significance() const;  // step, alarm: the levels in force
  // Rank 0's hang board: /metrics, /status and the textfile show its open episode and count
  // (http/hang_metrics.h). Unset: no hang families, no "hang" key.
  void show_hangs(std::shared_ptr<const HangBoard> hangs);
  // Changes each time something was added: the textfile is rewritten only then.
  uint64_t generation() const;

  // The Prometheus exposition; health: the probe's own numbers at this moment.
  std::string metrics_text(const ProbeHealth& health) const;
  // /status: last verdicts, open alarms, the ledger, health, config, hosts to drain.
  nlohmann::ordered_json status(const ProbeHealth& health) const;
  // Hosts behind open worker alarms (exclude_hosts.txt's list), sorted.
  std::vector<std::string> hosts_to_drain() const;

 private:
  void add_one(const online::StepVerdict& v);
  void add_loss(const online::StepVerdict& v);
  void note_alarm(const online::AlarmEvent& a);
  std::string host_of(int rank) const;
  int gpu_of(int rank) const;
  Labels labels(Labels extra) const;
  void write_step_families(Exposition* e) const;
  void write_ledger_families(Exposition* e) const;
  void write_alarm_families(Exposition* e) const;
  void write_probe_families(Exposition* e, const ProbeHealth& health) const;
  std::vector<std::string> hosts_to_drain_locked() const;
  std::optional<HangBoard::Snapshot> hang_snapshot() const;  // without the board's lock held
  nlohmann::ordered_json ledger_json() const;

  const std::string job_;
  const int gpus_;
  const nlohmann::ordered_json config_;
  mutable std::mutex mutex_;
  uint64_t generation_ = 0;
  online::RankTable ranks_;
  std::deque<online::StepVerdict> recent_;
  bool have_last_ = false;
  online::StepVerdict last_;  // the last analysed step
  uint64_t steps_analyzed_ = 0, steps_skipped_ = 0;
  std::map<std::string, uint64_t> steps_by_cause_;
  double gpu_seconds_ = 0, lost_gpu_seconds_ = 0, fixable_gpu_seconds_ = 0;
  std::map<std::string, double> lost_by_cause_, lost_by_host_;
  std::map<int, double> lost_by_stage_;
  std::map<int, LostEntry> lost_by_rank_;
  std::map<std::string, online::AlarmEvent> open_alarms_;  // key: target + " " + cause
  int64_t last_step_seen_ = -1;
  bool paused_ = false;
  double significance_ = 0, alarm_significance_ = 0;
  std::shared_ptr<const HangBoard> hangs_;
};

// One verdict as /status shows it (compact: the numbers an operator acts on).
nlohmann::ordered_json verdict_json(const online::StepVerdict& v);

}  // namespace sp::rank_pipeline::http
