#include "pipeline.h"

#include <cstdio>

#include "local_kv_store.h"

namespace sp::pyext {
namespace {

std::mutex& output_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void print_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(output_mutex());
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void warn_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(output_mutex());
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

Pipeline::Pipeline(PipelineOptions options, sp_kv_store* store)
    : options_(std::move(options)),
      store_(std::make_shared<KvClient>(store != nullptr ? store : make_local_kv_store())) {
  auto warn = [](const std::string& line) { warn_line(line); };
  if (options_.discard) {
    transport_ = start_discarder(counters_);
    return;
  }
  if (options_.transport.rank != 0) {
    transport_ = start_sender(
        options_.transport, store_, counters_, stop_,
        [this](const std::string&) {
          // Rank 0 printed the one warning; here the probe just goes quiet.
          state_.store(PipelineState::kStoppedRemotely);
        },
        warn);
    return;
  }
  worker_ = std::make_shared<AnalysisWorker>(
      options_.analysis, print_line, [this](const std::string& why) { fail(why); });
  auto worker = worker_;
  const auto timeout = options_.analysis_timeout;
  transport_ = start_collector(
      options_.transport, store_, counters_,
      [worker](StepBatch&& batch) { worker->submit(std::move(batch)); },
      [this, worker, timeout] {
        if (worker->busy_for() > timeout) {
          fail("the rank-0 analysis spent more than " + std::to_string(timeout.count()) +
               " ms on one step (stalled)");
        }
      },
      warn, stop_, [this](const std::string& why) {
        fail("the probe stopped on another rank (" + why + ")");
      });
}

Pipeline::~Pipeline() = default;

void Pipeline::fail(const std::string& message) {
  if (failed_once_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(message_mutex_);
    message_ = message;
  }
  state_.store(PipelineState::kSteppedAside);
  warn_line("straggler_probe: WARNING: " + message +
            "; the probe steps aside on every rank and training continues without it");
  if (worker_) worker_->abandon();
  stop_->raise(message);  // the collector tells the other ranks (if it still runs), then ends
}

void Pipeline::request_stop(const std::string& why) {
  if (options_.transport.rank == 0 || options_.discard) {
    fail("this rank's recording failed (" + why + ")");
    return;
  }
  state_.store(PipelineState::kSteppedAside);
  {
    std::lock_guard<std::mutex> lock(message_mutex_);
    if (message_.empty()) message_ = why;
  }
  stop_->raise(why);  // the sender writes the stop key; rank 0 and the others step aside
}

void Pipeline::stop(std::chrono::milliseconds drain) {
  const auto deadline = std::chrono::steady_clock::now() + drain;
  if (worker_) worker_->set_draining();
  if (transport_) {
    transport_->request_stop(deadline);
    // Stuck in a store call: the thread keeps running, so this Pipeline must outlive it.
    if (!transport_->join(drain + std::chrono::milliseconds(2000))) leaked_ = true;
  }
  if (worker_) {
    const bool aside = state_.load() == PipelineState::kSteppedAside;
    // An abandoned worker only has to unwind; a running one closes the analysis and writes the
    // report, which may take a while on a long job.
    if (!worker_->finish(aside ? std::chrono::milliseconds(500) : options_.analysis_timeout)) {
      leaked_ = true;
      if (!aside) fail("the rank-0 analysis did not finish its report in time (stalled)");
    }
  }
  if (state_.load() == PipelineState::kRunning) state_.store(PipelineState::kStopped);
}

std::string Pipeline::message() const {
  std::lock_guard<std::mutex> lock(message_mutex_);
  return message_;
}

std::map<std::string, double> Pipeline::stats() const {
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
  if (worker_) {
    const auto& c = worker_->counters();
    put("steps_analyzed", c.steps_analyzed);
    put("steps_skipped_behind", c.steps_skipped_behind);
    put("lines_printed", c.lines_printed);
    put("analysis_us_total", c.analysis_us_total);
    put("analysis_us_max", c.analysis_us_max);
  }
  return out;
}

}  // namespace sp::pyext
