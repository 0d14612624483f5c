// A job of many ranks in one process for the transport tests: every rank runs its real transport
// thread (start_sender / start_collector) on its own client of one in-process store, with
// summaries the test pushes; rank 0's batches are collected for the test to check.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host_transport/host_transport_driver.h"
#include "store/local_kv_store.h"
#include "transport/queued_summary_source.h"
#include "straggler_probe/step_summary.h"
#include "transport/transport.h"
#include "transport/transport_loop.h"

namespace sp::rank_pipeline::testing {

using namespace std::chrono_literals;

struct SimulatedRank {
  std::shared_ptr<QueuedSummarySource> source = std::make_shared<QueuedSummarySource>();
  std::shared_ptr<KvClient> store;
  std::shared_ptr<TransportCounters> counters = std::make_shared<TransportCounters>();
  std::shared_ptr<StopRequest> stop = std::make_shared<StopRequest>();
  std::unique_ptr<TransportThread> thread;
  std::unique_ptr<HostTransport> engine;  // driven (SimulatedJob::start_driven)
  std::atomic<int> remote_stops{0};
};

inline std::string encoded_summary(int rank, int world, int64_t step) {
  runtime::StepSummary s;
  s.rank = rank;
  s.world_size = world;
  s.step = step;
  s.step_start_ns = 1'000'000'000ull * static_cast<uint64_t>(step + 10);
  s.step_end_ns = s.step_start_ns + 1000;
  return runtime::encode_summary(s);
}

class SimulatedJob {
 public:
  // Ranks are placed on hosts "node-0", "node-1", ... `ranks_per_host` at a time.
  SimulatedJob(int world, int ranks_per_host, TransportOptions base,
               LocalKvApi api = LocalKvApi::kFull)
      : data_(make_local_kv_data()), ranks_(static_cast<size_t>(world)) {
    for (int r = 0; r < world; ++r) {
      SimulatedRank& sr = ranks_[static_cast<size_t>(r)];
      sr.store = std::make_shared<KvClient>(make_local_kv_store(api, data_));
      TransportOptions o = base;
      o.rank = r;
      o.world_size = world;
      o.identity.host = "node-" + std::to_string(r / ranks_per_host);
      o.identity.local_rank = r % ranks_per_host;
      o.identity.device = r % ranks_per_host;
      o.local_world_size = ranks_per_host;
      o.source = sr.source;
      options_.push_back(o);
    }
  }
  ~SimulatedJob() { stop(500ms); }

  void start() {
    for (int r = static_cast<int>(ranks_.size()) - 1; r >= 0; --r) start_rank(r);
  }
  // Rank 0 on its thread; the others' host transports driven by `threads` threads (thousands of
  // simulated ranks; host-aggregated protocol only).
  void start_driven(int threads) {
    std::vector<std::vector<HostTransport*>> shares(static_cast<size_t>(threads));
    for (int r = world() - 1; r >= 1; --r) {
      SimulatedRank& sr = rank(r);
      sr.engine = std::make_unique<HostTransport>(transport_context(
          options_[static_cast<size_t>(r)], sr.store, sr.counters, sr.stop,
          [&sr](const std::string&) { sr.remote_stops++; }, [this](const std::string& line) {
            std::lock_guard<std::mutex> lock(mutex_);
            warnings_.push_back(line);
          }));
      shares[static_cast<size_t>(r % threads)].push_back(sr.engine.get());
    }
    for (auto& share : shares) drivers_.push_back(std::make_unique<HostTransportDriver>(share));
    start_rank(0);
  }
  void start_rank(int r) {
    SimulatedRank& sr = ranks_[static_cast<size_t>(r)];
    auto on_stop = [&sr](const std::string&) { sr.remote_stops++; };
    auto warn = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      warnings_.push_back(line);
    };
    if (r == 0) {
      sr.thread = start_collector(
          options_[0], sr.store, sr.counters,
          [this](StepBatch&& b) {
            std::lock_guard<std::mutex> lock(mutex_);
            batches_.push_back(std::move(b));
          },
          [] {}, warn, sr.stop, on_stop);
    } else {
      sr.thread = start_sender(options_[static_cast<size_t>(r)], sr.store, sr.counters, sr.stop,
                               on_stop, warn);
    }
  }

  // Every rank for which `has(rank)` is true gets its summary of `step`.
  void push(int64_t step, const std::function<bool(int)>& has = [](int) { return true; }) {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (!has(static_cast<int>(r))) continue;
      ranks_[r].source->push(EncodedSummary{
          step, static_cast<int32_t>(r),
          encoded_summary(static_cast<int>(r), static_cast<int>(ranks_.size()), step)});
    }
  }

  void stop(std::chrono::milliseconds drain) {
    if (stopped_) return;
    stopped_ = true;
    for (auto& r : ranks_) r.source->close();
    const auto deadline = std::chrono::steady_clock::now() + drain;
    for (auto& r : ranks_) {
      if (r.thread) r.thread->request_stop(deadline);
    }
    for (auto& d : drivers_) d->request_stop(deadline);
    for (auto& r : ranks_) {
      if (r.thread) {
        EXPECT_TRUE(r.thread->join(drain + 5s));
      }
    }
    for (auto& d : drivers_) d->join();
  }

  bool wait_for_batches(size_t n, std::chrono::milliseconds within) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
      if (batch_count() >= n) return true;
      std::this_thread::sleep_for(5ms);
    }
    return batch_count() >= n;
  }
  size_t batch_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_.size();
  }
  std::vector<StepBatch> batches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }
  std::vector<std::string> warnings() {
    std::lock_guard<std::mutex> lock(mutex_);
    return warnings_;
  }

  SimulatedRank& rank(int r) { return ranks_[static_cast<size_t>(r)]; }
  // A rank's options, to change before it starts (heartbeat sources, hang settings).
  TransportOptions& options(int r) { return options_[static_cast<size_t>(r)]; }
  int world() const { return static_cast<int>(ranks_.size()); }
  size_t keys_in_store() const { return local_kv_size(*data_); }
  // Store operations of one kind, summed over ranks [from, to).
  uint64_t ops(KvOp op, int from = 0, int to = -1) {
    uint64_t n = 0;
    for (int r = from; r < (to < 0 ? world() : to); ++r) n += rank(r).store->counters().ops(op);
    return n;
  }
  uint64_t all_ops(int from = 0, int to = -1) {
    uint64_t n = 0;
    for (int r = from; r < (to < 0 ? world() : to); ++r) n += rank(r).store->counters().ops();
    return n;
  }

 private:
  std::shared_ptr<LocalKvData> data_;
  std::vector<SimulatedRank> ranks_;
  std::vector<TransportOptions> options_;
  std::vector<std::unique_ptr<HostTransportDriver>> drivers_;
  std::mutex mutex_;
  std::vector<StepBatch> batches_;
  std::vector<std::string> warnings_;
  bool stopped_ = false;
};

}  // namespace sp::rank_pipeline::testing
