// Summaries from every rank to rank 0 over the job's store, on background threads. Two
// protocols (rank_pipeline/README.md says why and what each costs):
//
// Host-aggregated (the default; needs the store's append and compare_set, c10d since torch 2.1):
// the ranks of one host elect a leader (store key host/<host>, compare_set: first come), send it
// their summaries over a Unix socket (local_channel.h), and the leader posts one message per step
// for the whole host (host_message.h). Keys under <prefix>:
//   host/<host>      "<leader rank> <socket name>": the host's leader;  host/<host>/n: its ranks
//   ranks            every rank's row (base/rank_row.h), appended once at start
//   d/<step>         the step's host messages, appended by the leaders
//   n/<step>         ranks the step's messages cover (add): rank 0 reads d/<step> once this
//                    reaches the world size (or the step times out), then deletes both
//   ctl              rank 0's ack (the last step dealt with), or "stop <why>" from any rank
//                    (and, after POST /control pause or resume, " rec <generation> <1|0>")
// Per step: two store operations per host (append, add) plus a ctl read every min(max_lag/2, 2) steps;
// rank 0 a few counter polls, one get, two deletes and one compare_set, whatever the world size.
//
// Per-rank (the fallback for a store without append or compare_set): every rank writes its own
// summary and rank 0 reads each. Keys under <prefix>:
//   s/<step>/<rank>  one rank's encoded summary of one step; rank 0 deletes it once read
//   h/<rank>         the last step that rank wrote: tells rank 0 a missing step was skipped
//   ack              the last step rank 0 has dealt with (analysed or given up)
//   stop             rank 0's analysis stepped aside: the others stop sending
//   r/<rank>         the rank's row of the rank table, set once
//
// Either way a rank (or host) sends step s only while s <= ack + max_lag, so the store holds at
// most max_lag steps however far rank 0 falls behind; meanwhile the runtime's own bounded queue
// skips whole old steps. Rank 0 never blocks on a missing key.
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

#include "base/rank_row.h"
#include "straggler_probe/rank_pipeline/runtime_calls.h"
#include "straggler_probe/rank_pipeline/seconds.h"
#include "hang/heartbeat.h"
#include "store/kv_client.h"
#include "straggler_probe/online/setting_defaults.h"
#include "summary_source.h"

namespace sp::rank_pipeline {

class HangBoard;

// Test hooks (STRAGGLER_PROBE_FAULT_INJECT): faults around the transport, for the fault tests.
enum class TransportFault {
  kNone,
  kCloseSocket,  // at step 5 one member (the highest rank that does not lead) closes its socket
  kDelay,        // at step 5 rank 1's transport thread stalls for 4 s (its summaries arrive late)
};

// Rank 0's POST /control pause or resume, relayed to every rank (host-aggregated protocol: on
// ctl, host_keys.h, and over the host sockets, frame kRecording): each rank applies the notice
// of the highest generation it has seen to its runtime, which takes it at its next step mark.
struct RecordingNotice {
  uint64_t generation = 0;  // 0: none yet
  bool paused = false;
};

// Rank 0: what /control asked last. Written by the server thread, read by the transport thread
// each pass (a mutex held for a copy; never on the training thread).
class RecordingSwitch {
 public:
  void ask(bool paused) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (notice_.generation > 0 && notice_.paused == paused) return;  // no change: no notice
    ++notice_.generation;
    notice_.paused = paused;
  }
  RecordingNotice current() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return notice_;
  }

 private:
  mutable std::mutex mutex_;
  RecordingNotice notice_;
};

enum class TransportProtocol {
  kAuto,            // host-aggregated when the store has append and compare_set, else per-rank
  kHostAggregated,
  kPerRank,
};

struct TransportOptions {
  int rank = 0;
  int world_size = 1;
  std::string prefix = "straggler_probe/0/";
  int max_lag = online::setting_defaults::kMaxLag;
  int64_t first_step = 0;  // steps before it (warm-up, and the set-up step -1) are not sent
  std::chrono::milliseconds step_timeout{seconds_to_ms(online::setting_defaults::kStepTimeoutS)};
  TransportProtocol protocol = TransportProtocol::kAuto;
  // This rank's row of the rank table (rank and leader are filled in by the transport); its
  // host name is also the host the ranks are grouped by (host_identity.h).
  RankInfo identity;
  // Ranks on this host (LOCAL_WORLD_SIZE, as torchrun sets it; -1: unknown): the host's leader
  // waits for that many members before its first post (else for those counted in the store).
  int local_world_size = -1;
  // A host's leader posts a step without the ranks that have not sent it after this long (0:
  // half the step timeout, so that rank 0 hears which rank is missing before it gives up).
  std::chrono::milliseconds host_timeout{0};
  // A rank that cannot reach its host's leader for this long sends as a host of its own.
  std::chrono::milliseconds connect_timeout{10000};
  // This process's runtime (runtime_calls.h): where the summaries, the heartbeat and the pause
  // go through when `source` is null.
  RuntimeCalls runtime;
  // Where this rank's summaries come from; null: `runtime`'s queue.
  std::shared_ptr<SummarySource> source;
  // Rank 0 polls the store for the others' summaries: every `poll` while they arrive, backing off
  // to `max_poll` while nothing comes, so that an idle collector costs the job's cores (and the
  // store server) next to nothing. Steps last far longer than max_poll.
  std::chrono::milliseconds poll{5};
  std::chrono::milliseconds max_poll{50};
  // Hang detection (host-aggregated protocol; hang_watch.h): rank 0 suspects a hang once no
  // step has completed on every rank for max(hang_multiple x the job's median step,
  // hang_after); hang_after 0: off. Heartbeats flow over the host sockets either way.
  std::chrono::milliseconds hang_after{seconds_to_ms(online::setting_defaults::kHangAfterS)};
  double hang_multiple = online::setting_defaults::kHangMultiple;
  // This rank's heartbeat; null: `runtime`'s when `source` is null too, else none.
  HeartbeatSource heartbeat;
  // Rank 0's hang episodes (for report.json) and every rank's hang notices (for the stack
  // dumps); null: none kept.
  std::shared_ptr<HangBoard> hang_board;
  // Rank 0's hang lines; null: stdout.
  std::function<void(const std::string&)> hang_print;
  TransportFault fault = TransportFault::kNone;
  // Rank 0 with /control: the pause it asks every rank for; null: none (other ranks).
  std::shared_ptr<RecordingSwitch> recording_switch;
  // Applies a pause or resume to this rank's recording; null: this process's runtime.
  std::function<void(bool)> set_recording_paused;
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
  // Host-aggregated protocol.
  std::atomic<uint64_t> summaries_late{0};      // reached the host's leader after it posted the step
  std::atomic<uint64_t> host_messages_sent{0};  // posted by this rank as its host's leader
  std::atomic<uint64_t> host_members{0};        // ranks this leader aggregates (itself included)
  std::atomic<uint64_t> bad_host_messages{0};   // rank 0: messages or rank rows that did not parse
  std::atomic<int> protocol{0};                 // 1 host-aggregated, 2 per-rank (once decided)
  // Heartbeats and hang detection (host-aggregated protocol).
  std::atomic<uint64_t> heartbeats_sent{0};     // frames to the leader (members), aggregates (leaders)
  std::atomic<uint64_t> bad_heartbeats{0};      // frames or aggregates that failed their checks
  std::atomic<uint64_t> hang_lines{0};          // rank 0: hang lines printed
  // /control's pause and resume (host-aggregated protocol).
  std::atomic<uint64_t> recording_notices{0};     // notices this rank applied
  std::atomic<uint64_t> bad_recording_frames{0};  // kRecording frames that failed their checks
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

// One step with every rank's summary (index = rank), or the ranks that never sent theirs.
struct StepBatch {
  int64_t step = 0;
  std::vector<std::string> by_rank;  // empty string: missing
  bool complete = false;
  std::string missing;               // "1,3" when incomplete
  // When incomplete, the line's reason: online::why_incomplete's words for the collector's
  // give_up_reason ("no summary from rank(s) 3 within 60 s"; step_assembly.h).
  std::string why_incomplete;
  // The rank table (index = rank), when it changed since the previous batch; null otherwise.
  std::shared_ptr<const std::vector<RankInfo>> rank_table;
};

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
std::unique_ptr<TransportThread> start_discarder(std::shared_ptr<TransportCounters> counters,
                                                 const RuntimeCalls& runtime);

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
