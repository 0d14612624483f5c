#include "rank_pipeline.h"

#include <cmath>
#include <cstdio>

#include "store/local_kv_store.h"
#include "report_sections.h"

namespace sp::rank_pipeline {
RunningPipeline::RunningPipeline(RankPipelineOptions options, sp_kv_store* store)
    : options_(std::move(options)),
      store_(std::make_shared<KvClient>(store != nullptr ? store : make_local_kv_store())) {
  auto warn = [](const std::string& line) { print_stderr_line(line); };
  options_.transport.hang_board = hang_board_;
  options_.analysis.hang_board = hang_board_;
  store_->set_on_lost([this](const std::string& why) { store_lost(why); });
  if (options_.discard) {
    transport_ = start_discarder(counters_, options_.transport.runtime);
    return;
  }
  start_clock_sync();
  if (options_.transport.rank != 0) {
    transport_ = start_sender(
        options_.transport, store_, counters_, stop_,
        [this](const std::string&) {
          // Rank 0 printed the one warning; here the probe just goes quiet.
          state_.store(RankPipelineState::kStoppedRemotely);
          if (clock_) clock_->request_stop();
        },
        warn);
    return;
  }
  if (options_.metrics.enabled()) {
    options_.analysis.board = std::make_shared<http::MetricsBoard>(
        options_.metrics.job, options_.transport.world_size, options_.config);
    options_.analysis.board->set_control_view(false, options_.analysis.settings.significance,
                                              options_.analysis.settings.alarm_significance);
    options_.analysis.board->show_hangs(hang_board_);  // what the hang watch publishes
    // Pause and resume reach every rank through the transport (host-aggregated protocol).
    options_.transport.recording_switch = std::make_shared<RecordingSwitch>();
    options_.analysis.control =
        std::make_shared<http::ControlState>(options_.transport.recording_switch);
  }
  worker_ = std::make_shared<AnalysisWorker>(
      options_.analysis, print_line, [this](const std::string& why) { fail(why); },
      [this](bool final) { return report_sections(final); });
  auto worker = worker_;
  // A hang episode rewrites the report at once: a job killed during the hang keeps it. Weak: the
  // worker holds the board (its options), and a board holding the worker back would keep both
  // alive for ever (LeakSanitizer found it, linked_runtime_test.cpp).
  hang_board_->on_record = [weak = std::weak_ptr<AnalysisWorker>(worker)] {
    if (const auto w = weak.lock()) w->request_report();
  };
  const auto timeout = options_.analysis_timeout;
  transport_ = start_collector(
      options_.transport, store_, counters_,
      [this, worker](StepBatch&& batch) {
        note_batch();
        worker->submit(std::move(batch));
      },
      [this, worker, timeout] {
        if (worker->busy_for() > timeout) {
          fail("the rank-0 analysis spent more than " + std::to_string(timeout.count()) +
               " ms on one step (stalled)");
        }
      },
      warn, stop_, [this](const std::string& why) {
        fail("the probe stopped on another rank (" + why + ")");
      });
  start_metrics();
}

// After the analysis thread exists: the board it fills is what the server shows.
void RunningPipeline::start_metrics() {
  if (!options_.analysis.board) return;
  metrics_ = http::MetricsService::start(
      options_.metrics, options_.analysis.board, options_.analysis.control,
      [this, runtime = options_.transport.runtime] {
        http::ProbeHealth h;
        const RankPipelineState s = state_.load();
        h.state = s == RankPipelineState::kRunning  ? "running"
                  : s == RankPipelineState::kStopped ? "stopped"
                                                     : "stepped-aside";
        h.message = message();
        h.stats = stats();
        // Rank 0's own recording: what its rings and summary queue dropped.
        sp_stats rs{};
        if (runtime.get_stats(&rs) == SP_OK) {
          h.stats["runtime_events_recorded"] = static_cast<double>(rs.events_recorded);
          h.stats["runtime_events_dropped"] = static_cast<double>(rs.events_dropped);
          h.stats["runtime_steps_skipped"] = static_cast<double>(rs.steps_skipped);
        }
        sp_pause_state ps{};  // /control's pause, as rank 0's own recording took it
        if (runtime.get_pause_state != nullptr && runtime.get_pause_state(&ps) == SP_OK) {
          h.stats["runtime_recording_pauses"] = static_cast<double>(ps.pauses);
          h.stats["runtime_steps_paused"] = static_cast<double>(ps.steps_paused);
        }
        return h;
      },
      [](const std::string& line) { print_stderr_line(line); });
}

RunningPipeline::~RunningPipeline() {
  if (metrics_) metrics_->stop();  // its thread reads this object
}

void RunningPipeline::start_clock_sync() {
  if (!options_.clock_sync || options_.transport.world_size < 2) return;
  ClockSyncOptions o;
  o.rank = options_.transport.rank;
  o.world_size = options_.transport.world_size;
  o.prefix = options_.transport.prefix;
  o.period = options_.clock_sync_period;
  ClockSyncHooks hooks;
  hooks.clock = [now = options_.transport.runtime.now_ns] { return static_cast<int64_t>(now()); };
  hooks.apply = [set = options_.transport.runtime.set_clock_offset](int64_t offset_ns) {
    set(offset_ns);
  };
  if (options_.analysis.settings.log_lines) hooks.print = print_line;
  hooks.warn = print_stderr_line;
  hooks.step_seconds = [this] { return static_cast<double>(step_ns_.load()) / 1e9; };
  clock_ = std::make_unique<ClockSync>(std::move(o), store_, std::move(hooks));
}

void RunningPipeline::note_batch() {
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  const int64_t last = last_batch_ns_.exchange(now);
  if (last == 0) return;
  const int64_t gap = now - last, avg = step_ns_.load();
  step_ns_.store(avg == 0 ? gap : avg + (gap - avg) / 8);
}

// The sections of every report rank 0 writes that only this pipeline knows.
online::ReportOptions RunningPipeline::report_sections(bool final) const {
  online::ReportOptions o;
  o.final = final;
  if (clock_) o.sections["clock"] = clock_section(clock_->table(), options_.clock_sync_period);
  o.sections["hangs"] = hang_board_->section();
  // The top kernels (a walk of the capture's tables under its lock) only at the end.
  add_gpu_capture(&o, options_.transport.runtime, options_.transport.rank, final);
  return o;
}

// The job's store stopped answering (kv_client.h: failures in a row): nothing of the probe's
// travels any more. One warning; this rank steps aside (its host's members hear it over their
// sockets and go quiet; other hosts' leaders find the store lost themselves).
void RunningPipeline::store_lost(const std::string& why) {
  const std::string message = "the job's store is unreachable (" + why + ")";
  if (options_.transport.rank == 0 || options_.discard) return fail(message);
  if (failed_once_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(message_mutex_);
    message_ = message;
  }
  state_.store(RankPipelineState::kSteppedAside);
  print_warning_line(message + "; the probe steps aside on this rank and training continues without it");
  if (clock_) clock_->request_stop();
  stop_->raise(message);
}

void RunningPipeline::fail(const std::string& message) {
  if (failed_once_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(message_mutex_);
    message_ = message;
  }
  state_.store(RankPipelineState::kSteppedAside);
  print_warning_line(message + "; the probe steps aside on every rank and training continues without it");
  if (worker_) worker_->abandon();
  if (clock_) clock_->request_stop();
  stop_->raise(message);  // the collector tells the other ranks (if it still runs), then ends
}

void RunningPipeline::request_stop(const std::string& why) {
  if (options_.transport.rank == 0 || options_.discard) {
    fail("this rank's recording failed (" + why + ")");
    return;
  }
  state_.store(RankPipelineState::kSteppedAside);
  {
    std::lock_guard<std::mutex> lock(message_mutex_);
    if (message_.empty()) message_ = why;
  }
  stop_->raise(why);  // the sender writes the stop key; rank 0 and the others step aside
}

void RunningPipeline::stop(std::chrono::milliseconds drain) {
  const auto deadline = std::chrono::steady_clock::now() + drain;
  hang_board_->close();
  if (clock_) clock_->request_stop();
  if (worker_) worker_->set_draining();
  if (transport_) {
    transport_->request_stop(deadline);
    // Stuck in a store call: the thread keeps running, so this RunningPipeline must outlive it.
    if (!transport_->join(drain + std::chrono::milliseconds(2000))) leaked_ = true;
  }
  // A clock thread stuck in a store call keeps using this RunningPipeline's store: leak it then.
  if (clock_ && !clock_->join(std::chrono::milliseconds(1000))) leaked_ = true;
  if (worker_) {
    const bool aside = state_.load() == RankPipelineState::kSteppedAside;
    // An abandoned worker only has to unwind; a running one closes the analysis and writes the
    // report, which may take a while on a long job.
    if (!worker_->finish(aside ? std::chrono::milliseconds(500) : options_.analysis_timeout)) {
      leaked_ = true;
      if (!aside) fail("the rank-0 analysis did not finish its report in time (stalled)");
    }
  }
  if (state_.load() == RankPipelineState::kRunning) state_.store(RankPipelineState::kStopped);
  // Last: a scrape during the drain still answers, and the textfile gets the final numbers.
  if (metrics_) metrics_->stop();
}

std::string RunningPipeline::message() const {
  std::lock_guard<std::mutex> lock(message_mutex_);
  return message_;
}

std::map<std::string, double> RunningPipeline::stats() const {
  std::map<std::string, double> out;
  auto put = [&](const char* name, const std::atomic<uint64_t>& v) {
    out[name] = static_cast<double>(v.load());
  };
  put("summaries_sent", counters_->summaries_sent);
  put("bytes_sent", counters_->bytes_sent);
  put("summaries_received", counters_->summaries_received);
  put("bytes_received", counters_->bytes_received);
  put("steps_complete", counters_->steps_complete);
  put("steps_incomplete", counters_->steps_incomplete);
  put("bad_summaries", counters_->bad_summaries);
  put("store_errors", counters_->store_errors);
  put("held_back_ms", counters_->held_back_ms);
  put("summaries_discarded", counters_->summaries_discarded);
  put("summaries_late", counters_->summaries_late);
  put("host_messages_sent", counters_->host_messages_sent);
  put("host_members", counters_->host_members);
  put("bad_host_messages", counters_->bad_host_messages);
  put("heartbeats_sent", counters_->heartbeats_sent);
  put("bad_heartbeats", counters_->bad_heartbeats);
  put("hang_lines", counters_->hang_lines);
  out["hang_episodes"] = static_cast<double>(hang_board_->episodes());
  out["transport_protocol"] = counters_->protocol.load();  // 1 host-aggregated, 2 per-rank
  out["store_ops"] = static_cast<double>(store_->counters().ops());
  out["store_bytes_out"] = static_cast<double>(store_->counters().bytes_out.load());
  out["store_bytes_in"] = static_cast<double>(store_->counters().bytes_in.load());
  if (clock_) {
    const std::vector<RankClock> rows = clock_->table();
    if (options_.transport.rank != 0 && !rows.empty()) {
      const RankClock& r = rows[0];
      out["clock_offset_ns"] = static_cast<double>(r.offset_ns);
      out["clock_uncertainty_ns"] = static_cast<double>(r.uncertainty_ns);
      out["clock_skew_ppm"] = r.skew_ppm ? *r.skew_ppm : std::nan("");
      out["clock_estimates"] = static_cast<double>(r.estimates);
      out["clock_failures"] = static_cast<double>(r.failures);
    } else {
      double known = 0, max_offset = 0, max_unc = 0;
      for (const RankClock& r : rows) {
        if (r.rank == 0 || !r.known) continue;
        ++known;
        max_offset = std::max(max_offset, std::fabs(static_cast<double>(r.offset_ns)));
        max_unc = std::max(max_unc, static_cast<double>(r.uncertainty_ns));
      }
      out["clock_ranks_estimated"] = known;
      out["clock_max_abs_offset_ns"] = max_offset;
      out["clock_max_uncertainty_ns"] = max_unc;
    }
  }
  if (worker_) {
    const auto& c = worker_->counters();
    put("steps_analyzed", c.steps_analyzed);
    put("steps_skipped_behind", c.steps_skipped_behind);
    put("lines_printed", c.lines_printed);
    put("analysis_us_total", c.analysis_us_total);
    put("analysis_us_max", c.analysis_us_max);
    put("reports_written", c.reports_written);
    put("report_us_total", c.report_us_total);
    put("report_us_max", c.report_us_max);
  }
  return out;
}

}  // namespace sp::rank_pipeline
