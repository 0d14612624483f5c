#include "analysis_worker.h"

#include <stdexcept>
#include <thread>
#include <vector>

#include "straggler_probe/step_summary.h"

#if SP_HAVE_ONLINE
#include "straggler_probe/online/analyzer.h"
#endif

namespace sp::rank_pipeline {
namespace {

int64_t now_ns() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

std::string skipped_line(int64_t first, int64_t last, const std::string& reason) {
  std::string steps = first == last ? std::to_string(first)
                                    : std::to_string(first) + "-" + std::to_string(last);
  return "straggler_probe step=" + steps + " skipped reason=\"" + reason + "\"";
}

}  // namespace

struct AnalysisWorker::Impl {
  AnalysisOptions o;
  std::function<void(const std::string&)> print;
  std::function<void(const std::string&)> on_failure;
  AnalysisCounters* counters = nullptr;

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<StepBatch> queue;
  bool finishing = false;
  bool abandoned = false;
  bool draining = false;
  int64_t behind_first = -1, behind_last = -1;  // steps dropped since the last notice
  std::atomic<int64_t> busy_since{0};
  std::string report_dir;
#if SP_HAVE_ONLINE
  std::unique_ptr<online::OnlineAnalyzer> analyzer;
#endif
  LoopThread thread;

  void run() {
    try {
      setup();
      while (true) {
        StepBatch batch;
        int64_t dropped_first = -1, dropped_last = -1;
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return abandoned || finishing || !queue.empty(); });
          if (abandoned) return;
          std::swap(dropped_first, behind_first);
          std::swap(dropped_last, behind_last);
          if (queue.empty()) break;  // finishing and drained
          batch = std::move(queue.front());
          queue.pop_front();
        }
        if (dropped_first >= 0) {
          emit(skipped_line(dropped_first, dropped_last,
                            "rank-0 analysis fell behind: " +
                                std::to_string(dropped_last - dropped_first + 1) +
                                " whole steps skipped"));
        }
        const int64_t t0 = now_ns();
        busy_since.store(t0);
        analyze(std::move(batch));
        busy_since.store(0);
        const auto us = static_cast<uint64_t>((now_ns() - t0) / 1000);
        counters->analysis_us_total += us;
        if (us > counters->analysis_us_max.load()) counters->analysis_us_max.store(us);
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
#if SP_HAVE_ONLINE
    online::OnlineConfig config;
    config.world_size = o.world_size;
    config.output_dir = o.out_dir;
    config.thresholds.none_below = o.slowdown_threshold;
    config.ideal.window_steps = o.window_steps;
    config.summary_interval = o.summary_interval;
    if (o.log_lines) config.log_sink = [this](const std::string& line) { emit(line); };
    analyzer = std::make_unique<online::OnlineAnalyzer>(std::move(config));
#endif
  }

  void emit(const std::string& line) {
    if (!o.log_lines) return;
    print(line);
    counters->lines_printed++;
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
#if SP_HAVE_ONLINE
    if (batch.rank_table) {  // where each rank runs: sent once, with the first batches
      online::RankTable table;
      for (const RankInfo& r : *batch.rank_table) table.push_back({r.host, r.local_rank, r.device});
      analyzer->set_rank_table(std::move(table));
    }
#endif
    if (o.fault == FaultInjection::kSlow) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    } else if (o.fault != FaultInjection::kNone &&
        counters->steps_analyzed.load() >= static_cast<uint64_t>(o.fault_after_steps)) {
      inject_fault();
    }
    if (!batch.complete) {
      counters->steps_incomplete++;
      emit(skipped_line(batch.step, batch.step, "no summary from rank(s) " + batch.missing));
      return;
    }
#if SP_HAVE_ONLINE
    for (size_t r = 0; r < batch.by_rank.size(); ++r) {
      runtime::StepSummary summary;
      std::string error;
      if (!runtime::decode_summary(batch.by_rank[r], &summary, &error)) {
        emit(skipped_line(batch.step, batch.step,
                          "summary of rank " + std::to_string(r) + " is malformed: " + error));
        return;  // the analyzer skips the step once later steps complete
      }
      analyzer->add(std::move(summary));
    }
#endif
    counters->steps_analyzed++;
  }

  void close() {
#if SP_HAVE_ONLINE
    analyzer->finish();
    if (!o.out_dir.empty()) {
      const auto status = analyzer->write_report(o.out_dir);
      if (status.ok) {
        report_dir = o.out_dir;
        print("straggler_probe report: " + o.out_dir + "/report.json " + o.out_dir +
              "/timeline.json " + o.out_dir + "/heatmap.svg " + o.out_dir + "/" +
              analyzer->config().jsonl_name);
      } else {
        print("straggler_probe report: not written: " + status.message);
      }
    }
#else
    print("straggler_probe report: not written: built without the online analysis (online/)");
#endif
  }
};

AnalysisWorker::AnalysisWorker(AnalysisOptions options,
                               std::function<void(const std::string&)> print,
                               std::function<void(const std::string&)> on_failure)
    : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(options);
  impl_->print = std::move(print);
  impl_->on_failure = std::move(on_failure);
  impl_->counters = &counters_;
  Impl* impl = impl_.get();
  impl_->thread.start([impl] { impl->run(); });
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

void AnalysisWorker::abandon() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->abandoned = true;
  impl_->queue.clear();
  impl_->cv.notify_all();
}

std::string AnalysisWorker::report_dir() const { return impl_->report_dir; }

}  // namespace sp::rank_pipeline
