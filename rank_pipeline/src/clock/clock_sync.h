// Clock offsets of every rank to rank 0, estimated over the job's store (the transport's, under
// the same session prefix) so that rank 0 can put all ranks' times on one axis.
//
// Keys (under <prefix>clk/):
//   n          ticket counter (Store::add): a client takes one per estimate; rank 0 serves the
//              tickets in order, one client at a time
//   q/<n>/<i>  the client's i-th request ("req <rank>"), or, after its last one, its result
//              ("res <rank> <ok> <offset_ns> <uncertainty_ns> <rtt_ns> <skew_ppm|nan>")
//   a/<n>/<i>  rank 0's answer: its clock when it saw request i
//   serving    the ticket rank 0 serves now: a waiting client looks again in proportion to the
//              tickets ahead of it (thousands of ranks would otherwise poll every 50 ms)
// Rank 0 deletes the q keys it read, the client the a keys. The ranks poll (never block in the
// store: the job shares the store client); rank 0 polls fast only while serving a ticket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "clock_offset.h"
#include "store/kv_client.h"
#include "base/loop_thread.h"

namespace sp::rank_pipeline {

struct ClockSyncOptions {
  int rank = 0;
  int world_size = 1;
  std::string prefix = "straggler_probe/0/";
  std::chrono::milliseconds period{60000};  // re-estimation (tracks drift, measures skew)
  ClockEstimatorOptions estimator;
  // Rank 0 gives up on a client that sent no next request for this long (longer than the
  // client's own budget, so that a slow client still gets its answers).
  std::chrono::milliseconds server_timeout{2000};
  // Rank 0 prints its start-up line once every rank reported, or after this long.
  std::chrono::milliseconds start_line_after{35000};
  // Rank 0 warns once when the largest uncertainty exceeds this share of a step.
  double warn_share_of_step = 0.01;
};

struct RankClock {
  int rank = 0;
  bool known = false;  // at least one estimate
  int64_t offset_ns = 0, uncertainty_ns = 0, rtt_ns = 0;
  std::optional<double> skew_ppm;
  uint64_t estimates = 0, failures = 0;
  std::string error;  // the last failure
};

struct ClockSyncHooks {
  LocalClock clock;                                   // the probe clock (sp_now_ns)
  std::function<void(int64_t)> apply;                 // sp_set_clock_offset (ranks != 0)
  std::function<void(const std::string&)> print, warn;
  std::function<double()> step_seconds;               // rank 0: typical step time, 0: unknown
};

class ClockSync {
 public:
  ClockSync(ClockSyncOptions options, std::shared_ptr<KvClient> store, ClockSyncHooks hooks);
  ~ClockSync();
  ClockSync(const ClockSync&) = delete;
  ClockSync& operator=(const ClockSync&) = delete;

  void request_stop();
  bool join(std::chrono::milliseconds timeout);  // false: stuck in a store call, detached

  // Rank 0: every rank's row (rank 0's is exact: 0). Others: their own row only.
  std::vector<RankClock> table() const;
  const ClockSyncOptions& options() const { return o_; }

 private:
  void run_client();
  void run_server();
  bool sleep_for(std::chrono::nanoseconds d);  // false: stopping
  void client_round(SkewTracker* skew);
  bool serve_request(int64_t ticket, int index, const std::string& value, int* client);
  void maybe_report(std::chrono::steady_clock::time_point started);

  ClockSyncOptions o_;
  std::shared_ptr<KvClient> store_;
  ClockSyncHooks hooks_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<RankClock> table_;
  bool start_line_done_ = false, skew_line_done_ = false, uncertainty_warned_ = false;
  LoopThread thread_;
};

// Parses a result message ("res ..."); false when malformed.
bool parse_clock_result(const std::string& text, RankClock* out);
std::string format_clock_result(int rank, const ClockEstimate& e, std::optional<double> skew);

}  // namespace sp::rank_pipeline
