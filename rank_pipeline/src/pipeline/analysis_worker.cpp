#include "analysis_worker.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "straggler_probe/online/analysis_driver.h"
#include "straggler_probe/online/thread_priority.h"
#include "straggler_probe/output_line.h"
#include "straggler_probe/step_summary.h"
#include "straggler_probe/thread_clock.h"

namespace sp::rank_pipeline {
namespace {

using Steady = std::chrono::steady_clock;

int64_t now_ns() { return Steady::now().time_since_epoch().count(); }

// This thread's CPU time: what a write costs the job. Its wall time is not: at nice +10 on a
// busy host a write's wall time is mostly waiting for training to yield the core.
std::chrono::nanoseconds thread_cpu() { return std::chrono::nanoseconds(runtime::thread_cpu_ns()); }

void note_max(std::atomic<uint64_t>& max, uint64_t v) {
  if (v > max.load()) max.store(v);
}

}  // namespace

struct AnalysisWorker::Impl {
  AnalysisOptions o;
  std::function<void(const std::string&)> print;
  std::function<void(const std::string&)> on_failure;
  ReportSections report_sections;
  AnalysisCounters* counters = nullptr;

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<StepBatch> queue;
  bool finishing = false;
  bool abandoned = false;
  bool report_wanted = false;
  bool draining = false;
  int64_t behind_first = -1, behind_last = -1;  // steps dropped since the last notice
  std::atomic<int64_t> busy_since{0};
  std::unique_ptr<online::AnalysisDriver> driver;
  // Partial reports (the first is due after the first step): when each kind is next due, and the
  // last cost of a write without the timeline (to tell the timeline's own cost).
  Steady::time_point next_partial_report{}, next_partial_timeline{};
  Steady::duration report_cost{0};
  // /control: analysis paused since step paused_first (-1: not paused), through paused_last.
  int64_t paused_first = -1, paused_last = -1;
  // Steps some rank recorded while paused (its summary has no events) outside the analysis's own
  // pause: the ranks take /control's pause a step or two after rank 0's analysis does.
  int64_t recording_paused_first = -1, recording_paused_last = -1;
  std::string recording_paused_ranks;  // of the first such step
  LoopThread thread;

  void run() {
    try {
      setup();
      while (true) {
        StepBatch batch;
        int64_t dropped_first = -1, dropped_last = -1;
        bool report_only = false;
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return abandoned || finishing || report_wanted || !queue.empty(); });
          if (abandoned) return;
          report_only = report_wanted && queue.empty() && !finishing;
          // Asked for (a hang episode): the next write is not held to the interval.
          if (report_wanted) next_partial_report = Steady::time_point{};
          report_wanted = false;
          if (!report_only) {
            std::swap(dropped_first, behind_first);
            std::swap(dropped_last, behind_last);
            if (queue.empty()) break;  // finishing and drained
            batch = std::move(queue.front());
            queue.pop_front();
          }
        }
        if (report_only) {
          maybe_write_partial_report();
          continue;
        }
        if (dropped_first >= 0) {
          publish(driver->skip_steps(dropped_first, dropped_last, "behind",
                           "rank-0 analysis fell behind: " +
                               std::to_string(dropped_last - dropped_first + 1) +
                               " whole steps skipped"));
        }
        const int64_t t0 = now_ns();
        busy_since.store(t0);
        analyze(std::move(batch));
        const auto us = static_cast<uint64_t>((now_ns() - t0) / 1000);
        counters->analysis_us_total += us;
        note_max(counters->analysis_us_max, us);
        maybe_write_partial_report();
        busy_since.store(0);
      }
      busy_since.store(now_ns());
      close();
      busy_since.store(0);
    } catch (const std::exception& e) {
      busy_since.store(0);
      on_failure(std::string("the rank-0 analysis threw: ") + e.what());
    } catch (...) {
      busy_since.store(0);
      on_failure("the rank-0 analysis threw an unknown exception");
    }
  }

  void setup() {
    // Rank 0's CPU is the job's: this thread yields to training and keeps to a tenth of a core.
    std::string why;
    if (!online::lower_this_thread_priority(online::kAnalysisNiceIncrement, &why)) {
      runtime::print_warning_line(why + "; the analysis keeps the training's priority");
    }
    online::AnalysisSettings settings = o.settings;
    settings.cpu_budget = 0.1;
    if (o.hang_board) {
      settings.silent_ranks = [board = o.hang_board] {
        auto [episode, ranks] = board->latest_silent();
        return online::OnlineConfig::SilentRanks{episode, std::move(ranks)};
      };
    }
    driver = std::make_unique<online::AnalysisDriver>(
        std::move(settings),
        [this](const std::string& line) {
          print(line);
          counters->lines_printed++;
        },
        [](const std::string& warning) { runtime::print_warning_line(warning); });
  }

  void inject_fault() {
    if (o.fault == FaultInjection::kThrow) {
      throw std::runtime_error("injected fault (STRAGGLER_PROBE_FAULT_INJECT=throw)");
    }
    // A stall that only the watchdog notices; it ends when the probe abandons this thread, so a
    // test process still exits normally.
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return abandoned; });
    throw std::runtime_error("injected stall ended");
  }

  void analyze(StepBatch&& batch) {
    if (batch.rank_table) {  // where each rank runs: sent once, with the first batches
      online::RankTable places = places_of(*batch.rank_table);
      if (o.board) o.board->set_rank_table(places);
      driver->set_rank_table(std::move(places));
    }
    if (apply_control(batch.step)) {  // paused
      end_recording_pause();  // the ranks' own paused steps before it, a range of their own
      return;
    }
    if (o.fault == FaultInjection::kSlow) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    } else if (o.fault != FaultInjection::kNone &&
        counters->steps_analyzed.load() >= static_cast<uint64_t>(o.fault_after_steps)) {
      inject_fault();
    }
    // The collector decided; given-up and unreadable steps are reported (one line, JSONL,
    // counted in report.json), the others analysed.
    if (!batch.complete) {
      counters->steps_incomplete++;
      publish(driver->skip_steps(batch.step, batch.step, "incomplete", batch.why_incomplete));
      return;
    }
    std::vector<runtime::StepSummary> summaries(batch.by_rank.size());
    for (size_t r = 0; r < batch.by_rank.size(); ++r) {
      std::string error;
      if (!runtime::decode_summary(batch.by_rank[r], &summaries[r], &error)) {
        publish(driver->skip_steps(batch.step, batch.step, "malformed",
                                 "summary of rank " + std::to_string(r) + " is malformed: " + error));
        return;
      }
    }
    if (skip_if_recording_paused(batch.step, summaries)) return;
    end_recording_pause();
    publish(driver->analyze_step(batch.step, std::move(summaries)));
    counters->steps_analyzed++;
  }

  online::ReportOptions report_options(bool final) {
    online::ReportOptions options = report_sections ? report_sections(final) : online::ReportOptions{};
    options.final = final;
    return options;
  }

  // While the job runs the report is rewritten every few steps, so that a job ended by a signal
  // (torchrun's SIGTERM after a rank died, a scheduler's cancel, SIGKILL) keeps one covering all
  // but its last few steps; the probe installs no signal handler (docs/ARCHITECTURE.md). After a
  // step, report.json and heatmap.svg once partial_report_interval(their cost) has passed,
  // timeline.json (the large file of a large job) on its own interval: each costs the analysis
  // thread at most 1/kPartialReportCostFactor of its time, however large the job.
  void maybe_write_partial_report() {
    const auto t0 = Steady::now();
    if (o.settings.out_dir.empty() || t0 < next_partial_report) return;
    const bool timeline = t0 >= next_partial_timeline;
    online::ReportOptions options = report_options(false);
    options.write_timeline = timeline;
    const auto cpu0 = thread_cpu();
    (void)driver->write_report(std::move(options));
    const auto now = Steady::now();
    const std::chrono::nanoseconds cost = thread_cpu() - cpu0;
    if (timeline) {
      next_partial_timeline = now + partial_report_interval(cost - std::min(cost, report_cost));
      next_partial_report = now + partial_report_interval(std::min(cost, report_cost.count() ? report_cost : cost));
    } else {
      report_cost = cost;
      next_partial_report = now + partial_report_interval(cost);
    }
    const auto us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(cost).count());
    counters->reports_written++;
    counters->report_us_total += us;
    note_max(counters->report_us_max, us);
  }

  void publish(const std::vector<online::StepVerdict>& verdicts) {
    if (o.board) o.board->add_verdicts(verdicts);
  }

  // What /control asked (http/control.h), taken at this step boundary and said once. True: the
  // analysis is paused, this step is not analysed (the paused range is reported on resume).
  bool apply_control(int64_t step) {
    if (o.board) o.board->note_step_seen(step);
    if (!o.control) return false;
    const http::ControlChange change = o.control->take();
    const std::string at = " at step " + std::to_string(step) + " (POST /control)";
    if (change.paused && *change.paused != (paused_first >= 0)) {
      if (*change.paused) {
        paused_first = step;
        print("straggler_probe control: analysis paused" + at);
      } else {
        end_pause();
        print("straggler_probe control: analysis resumed" + at);
      }
    }
    if (change.significance) {
      driver->set_significance(change.significance->first, change.significance->second);
      char levels[96];
      std::snprintf(levels, sizeof(levels), "significance=%g alarm_significance=%g",
                    change.significance->first, change.significance->second);
      print(std::string("straggler_probe control: ") + levels + at);
    }
    if (change.write_report) {
      next_partial_report = Steady::time_point{};  // the next write is not held to the interval
      print("straggler_probe control: report written" + at);
    }
    if (!change.empty() && o.board) {
      o.board->set_control_view(paused_first >= 0, driver->settings().significance,
                                driver->settings().alarm_significance);
    }
    if (paused_first < 0) return false;
    paused_last = step;
    return true;
  }

  bool skip_if_recording_paused(int64_t step, const std::vector<runtime::StepSummary>& summaries) {
    std::string ranks;
    for (size_t r = 0; r < summaries.size(); ++r) {
      if (runtime::recorded_while_paused(summaries[r])) {
        if (!ranks.empty()) ranks += ',';
        ranks += std::to_string(r);
      }
    }
    if (ranks.empty()) return false;
    if (recording_paused_first < 0) {
      recording_paused_first = step;
      recording_paused_ranks = ranks;
    }
    recording_paused_last = step;
    return true;
  }

  void end_recording_pause() {
    if (recording_paused_first < 0) return;
    publish(driver->skip_steps(recording_paused_first, recording_paused_last, "paused",
                             "recording paused by /control on rank(s) " + recording_paused_ranks));
    recording_paused_first = recording_paused_last = -1;
  }

  void end_pause() {
    if (paused_first >= 0 && paused_last >= paused_first) {
      publish(driver->skip_steps(paused_first, paused_last, "paused", "analysis paused by /control"));
    }
    paused_first = paused_last = -1;
  }

  void close() {
    end_recording_pause();
    end_pause();
    driver->finish();
    if (!o.settings.out_dir.empty()) (void)driver->write_report(report_options(true));
  }
};

AnalysisWorker::AnalysisWorker(AnalysisOptions options,
                               std::function<void(const std::string&)> print,
                               std::function<void(const std::string&)> on_failure,
                               ReportSections report_sections)
    : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(options);
  impl_->print = std::move(print);
  impl_->on_failure = std::move(on_failure);
  impl_->report_sections = std::move(report_sections);
  impl_->counters = &counters_;
  Impl* impl = impl_.get();
  impl_->thread.start("sp_analysis", [impl] { impl->run(); });
}

AnalysisWorker::~AnalysisWorker() = default;

void AnalysisWorker::submit(StepBatch&& batch) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->abandoned || impl_->finishing) return;
  while (!impl_->draining && impl_->queue.size() >= static_cast<size_t>(impl_->o.max_lag)) {
    const int64_t step = impl_->queue.front().step;
    if (impl_->behind_first < 0) impl_->behind_first = step;
    impl_->behind_last = step;
    impl_->queue.pop_front();
    counters_.steps_skipped_behind++;
  }
  impl_->queue.push_back(std::move(batch));
  impl_->cv.notify_one();
}

void AnalysisWorker::set_draining() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->draining = true;
}

std::chrono::milliseconds AnalysisWorker::busy_for() const {
  const int64_t since = impl_->busy_since.load();
  if (since == 0) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(now_ns() - since));
}

bool AnalysisWorker::finish(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->finishing = true;
    impl_->cv.notify_all();
  }
  return impl_->thread.join_for(timeout);
}

void AnalysisWorker::request_report() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->report_wanted = true;
  impl_->cv.notify_one();
}

void AnalysisWorker::abandon() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->abandoned = true;
  impl_->queue.clear();
  impl_->cv.notify_all();
}

}  // namespace sp::rank_pipeline
