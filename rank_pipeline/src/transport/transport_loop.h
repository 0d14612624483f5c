// What every transport thread shares: the stop flag and drain deadline, the thread itself, and
// the one warning it may print (later errors are only counted).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/loop_thread.h"
#include "transport.h"

namespace sp::rank_pipeline {

class HeartbeatLink;

// This rank's side of /control's pause (transport.h's RecordingNotice): the highest generation
// seen, applied once. The transport thread's only (no lock).
class RecordingRelay {
 public:
  explicit RecordingRelay(std::function<void(bool)> apply) : apply_(std::move(apply)) {}
  // True (and applied) when `notice` is newer than any seen: the caller passes it on.
  bool take(const RecordingNotice& notice) {
    if (notice.generation <= seen_.generation) return false;
    seen_ = notice;
    if (apply_) apply_(notice.paused);
    return true;
  }
  const RecordingNotice& seen() const { return seen_; }

 private:
  std::function<void(bool)> apply_;
  RecordingNotice seen_;
};

// Everything a transport thread is started with.
struct TransportContext {
  TransportOptions o;
  std::shared_ptr<KvClient> store;
  std::shared_ptr<TransportCounters> counters;
  std::shared_ptr<StopRequest> stop;
  std::function<void(const std::string&)> on_remote_stop;
  std::function<void(const std::string&)> warn;
  // The host protocol's heartbeats (heartbeat_link.h); set by HostTransport.
  std::shared_ptr<HeartbeatLink> link;
  // /control's pause (host-aggregated protocol); set by HostTransport.
  std::shared_ptr<RecordingRelay> recording;
  // Rank 0 only.
  std::function<void(StepBatch&&)> deliver;
  std::function<void()> watchdog;
};

class StoppableLoop : public TransportThread {
 public:
  using Clock = std::chrono::steady_clock;

  void request_stop(Clock::time_point drain_deadline) override {
    deadline_ns_.store(drain_deadline.time_since_epoch().count());
    stop_.store(true);
  }
  bool join(std::chrono::milliseconds timeout) override { return thread_.join_for(timeout); }

 protected:
  bool stopping() const { return stop_.load(); }
  bool past_deadline() const {
    return stop_.load() && Clock::now().time_since_epoch().count() >= deadline_ns_.load();
  }
  LoopThread thread_;

 private:
  std::atomic<bool> stop_{false};
  std::atomic<Clock::rep> deadline_ns_{0};
};

// "straggler_probe transport (rank R): <what> (further errors are counted, not printed)", once.
class TransportWarning {
 public:
  TransportWarning(int rank, std::function<void(const std::string&)> warn)
      : rank_(rank), warn_(std::move(warn)) {}
  void operator()(const std::string& what) {
    if (warned_.exchange(true)) return;
    warn_("straggler_probe transport (rank " + std::to_string(rank_) + "): " + what +
          " (further errors are counted, not printed)");
  }

 private:
  int rank_;
  std::function<void(const std::string&)> warn_;
  std::atomic<bool> warned_{false};
};

// Host-aggregated unless the options force per-rank or the store lacks append / compare_set.
bool speaks_host_protocol(const TransportOptions& o, const KvClient& store);

// A context for a rank that is not rank 0 (no deliver, no watchdog); source: the runtime's when
// the options have none.
TransportContext transport_context(const TransportOptions& options,
                                   std::shared_ptr<KvClient> store,
                                   std::shared_ptr<TransportCounters> counters,
                                   std::shared_ptr<StopRequest> stop,
                                   std::function<void(const std::string&)> on_remote_stop,
                                   std::function<void(const std::string&)> warn);

std::unique_ptr<TransportThread> start_per_rank_sender(TransportContext context);
std::unique_ptr<TransportThread> start_per_rank_collector(TransportContext context);
std::unique_ptr<TransportThread> start_host_transport(TransportContext context);

}  // namespace sp::rank_pipeline
