// Rank 0's analysis thread: decodes each step's summaries and feeds the analysis
// (online::AnalysisDriver), which prints the per-step lines and writes the JSONL; every few steps it
// rewrites the report (marked partial), and at the end writes the final one.
//
// It must never hold up training: it takes steps from a bounded queue, and when it falls more
// than max_lag steps behind the oldest whole steps are skipped and counted. An exception, or a
// step taking longer than analysis_timeout (the collector thread watches busy_for()), makes the
// probe step aside with one warning; a stalled thread is left behind, never joined.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "hang/hang_board.h"
#include "http/control.h"
#include "http/metrics_board.h"
#include "base/loop_thread.h"
#include "straggler_probe/online/analysis_driver.h"
#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/online/setting_defaults.h"
#include "transport/transport.h"

namespace sp::rank_pipeline {

// Test hooks (STRAGGLER_PROBE_FAULT_INJECT): throw or stall once some steps are analysed, or make
// every step's analysis slow (500 ms) so that rank 0 falls behind the job.
enum class FaultInjection { kNone, kThrow, kStall, kSlow };

struct AnalysisOptions {
  // The analysis's user-facing settings, as analyze-dir has them too (its world size, report
  // directory, lines, thresholds, hang bound, timeline). The worker sets the two that are its
  // own: the CPU budget (a tenth of a core beside training) and the hang board's silent ranks.
  online::AnalysisSettings settings;
  int max_lag = online::setting_defaults::kMaxLag;  // the queue of steps waiting for the analysis
  std::shared_ptr<HangBoard> hang_board;  // rank 0's hang episodes: the silent rank of a hang step
  FaultInjection fault = FaultInjection::kNone;
  int fault_after_steps = 3;  // the fault hits once this many steps were analysed
  // Rank 0's metrics server (http/): the verdicts go to its board; /control's changes are taken
  // at each step boundary. Null: no server.
  std::shared_ptr<http::MetricsBoard> board;
  std::shared_ptr<http::ControlState> control;
};

struct AnalysisCounters {
  std::atomic<uint64_t> steps_analyzed{0};
  std::atomic<uint64_t> steps_skipped_behind{0};  // dropped: the analysis fell behind
  std::atomic<uint64_t> steps_incomplete{0};
  std::atomic<uint64_t> lines_printed{0};
  std::atomic<uint64_t> analysis_us_total{0};  // time spent analysing (what rank 0 pays per step)
  std::atomic<uint64_t> analysis_us_max{0};
  std::atomic<uint64_t> reports_written{0};    // partial reports, written while the job runs
  std::atomic<uint64_t> report_us_total{0};
  std::atomic<uint64_t> report_us_max{0};
};

// Partial reports: report.json + heatmap.svg, and separately timeline.json (a large job's is
// large), each at most once per kPartialReportEvery and with the analysis thread spending at
// most 1 / kPartialReportCostFactor of its CPU time on it (see maybe_write_partial_report).
inline constexpr std::chrono::milliseconds kPartialReportEvery{500};
inline constexpr int kPartialReportCostFactor = 100;
// How long after a write that took `cost` the next of its kind may be written.
inline std::chrono::nanoseconds partial_report_interval(std::chrono::nanoseconds cost) {
  return std::max<std::chrono::nanoseconds>(kPartialReportEvery, cost * kPartialReportCostFactor);
}

// The report's sections the analysis does not know (clock offsets, GPU capture), asked for at
// each report write, on the analysis thread; final: the end-of-run report.
using ReportSections = std::function<online::ReportOptions(bool final)>;

class AnalysisWorker {
 public:
  // on_failure: called once, from whichever thread saw the failure, with one line.
  AnalysisWorker(AnalysisOptions options, std::function<void(const std::string&)> print,
                 std::function<void(const std::string&)> on_failure,
                 ReportSections report_sections = nullptr);
  ~AnalysisWorker();

  void submit(StepBatch&& batch);  // never blocks
  // The job is ending: what arrives now is the tail of the run, analysed in full, not skipped.
  void set_draining();
  // 0 when idle; otherwise how long the current step has been in the analyzer.
  std::chrono::milliseconds busy_for() const;
  // Finish: analyse what is queued, close pending steps, write the report. Waits up to timeout.
  // false: the thread did not finish (stalled); the caller must leak this object.
  bool finish(std::chrono::milliseconds timeout);
  void abandon();  // stop taking work (the probe stepped aside)
  // Rewrite the partial report soon, even with no step to analyse (a hang episode was opened or
  // said again: a job killed during the hang keeps it). Never blocks.
  void request_report();

  const AnalysisCounters& counters() const { return counters_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  AnalysisCounters counters_;
};

}  // namespace sp::rank_pipeline
