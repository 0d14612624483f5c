// Summaries from every rank to rank 0 over the job's store, on background threads.
//
// Keys (all under <prefix>, one prefix per probe session):
//   s/<step>/<rank>  one rank's encoded summary of one step; rank 0 deletes it once read
//   h/<rank>         the last step that rank wrote: tells rank 0 a missing step was skipped
//   ack              the last step rank 0 has dealt with (analysed or given up)
//   stop             rank 0's analysis stepped aside: the others stop sending
// A rank writes step s only while s <= ack + max_lag, so the store holds at most max_lag steps
// per rank however far rank 0 falls behind; meanwhile the runtime's own bounded queue skips
// whole old steps. Rank 0 never blocks on a missing key (check before get).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv_client.h"
#include "straggler_probe/online/step_assembly.h"
#include "summary_source.h"

namespace sp::rank_pipeline {

struct TransportOptions {
  int rank = 0;
  int world_size = 1;
  std::string prefix = "straggler_probe/0/";
  int max_lag = 8;
  int64_t first_step = 0;  // steps before it (warm-up, and the set-up step -1) are not sent
  std::chrono::milliseconds step_timeout{60000};
  // Rank 0 polls the store for the others' summaries: every `poll` while they arrive, backing off
  // to `max_poll` while nothing comes, so that an idle collector costs the job's cores (and the
  // store server) next to nothing. Steps last far longer than max_poll.
  std::chrono::milliseconds poll{5};
  std::chrono::milliseconds max_poll{50};
};

struct TransportCounters {
  std::atomic<uint64_t> summaries_sent{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> summaries_received{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> steps_complete{0};
  std::atomic<uint64_t> steps_incomplete{0};   // given up: a rank skipped it or never sent it
  std::atomic<uint64_t> bad_summaries{0};
  std::atomic<uint64_t> store_errors{0};
  std::atomic<uint64_t> held_back_ms{0};       // time a sender waited for rank 0's ack
  std::atomic<uint64_t> summaries_discarded{0};  // transport=none
};

// A request to make every rank's probe step aside, raised on any rank (rank 0's analysis failed,
// or this rank's recording did) and carried by the store's `stop` key.
struct StopRequest {
  std::atomic<bool> requested{false};
  std::mutex mutex;
  std::string why;
  void raise(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (why.empty()) why = reason;
    }
    requested.store(true);
  }
  std::string reason() {
    std::lock_guard<std::mutex> lock(mutex);
    return why;
  }
};

// One step with every rank's encoded summary (index = rank), or given up with the ranks that
// never sent theirs (online/include/straggler_probe/online/step_assembly.h decides which).
using StepBatch = online::ClosedStep<std::string>;

std::string data_key(const TransportOptions& o, int64_t step, int rank);

class TransportThread {
 public:
  virtual ~TransportThread() = default;
  // Stop after sending / collecting what is still queued, or at the deadline.
  virtual void request_stop(std::chrono::steady_clock::time_point drain_deadline) = 0;
  // Joins up to `timeout`; false when the thread is stuck (in a store call): then it is leaked.
  virtual bool join(std::chrono::milliseconds timeout) = 0;
};

// Ranks other than 0.
// on_remote_stop: another rank asked everyone to step aside (the store's stop key). A local
// request (stop->requested) is written to that key, then the sender ends.
std::unique_ptr<TransportThread> start_sender(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::shared_ptr<StopRequest> stop,
    std::function<void(const std::string&)> on_remote_stop,
    std::function<void(const std::string&)> warn);

// transport=none: pops this rank's summaries and drops them (counted), so that the runtime's
// queue does not overflow and warn about a transport nobody asked for.
std::unique_ptr<TransportThread> start_discarder(std::shared_ptr<TransportCounters> counters);

// Rank 0: collects its own and the others' summaries into StepBatches, in step order.
// `deliver` must not block; `watchdog` runs every pass (the analysis watchdog). A local stop
// request is published to the store's stop key, then the collector ends; a stop key written by
// another rank is reported through on_remote_stop.
std::unique_ptr<TransportThread> start_collector(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::function<void(StepBatch&&)> deliver,
    std::function<void()> watchdog, std::function<void(const std::string&)> warn,
    std::shared_ptr<StopRequest> stop, std::function<void(const std::string&)> on_remote_stop);

}  // namespace sp::rank_pipeline
