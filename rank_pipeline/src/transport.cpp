#include "transport.h"

#include <algorithm>
#include <optional>

#include "loop_thread.h"

namespace sp::rank_pipeline {
namespace {

using Clock = std::chrono::steady_clock;

std::string head_key(const TransportOptions& o, int rank) {
  return o.prefix + "h/" + std::to_string(rank);
}
std::string ack_key(const TransportOptions& o) { return o.prefix + "ack"; }
std::string stop_key(const TransportOptions& o) { return o.prefix + "stop"; }

// Shared by both directions: stop flag, drain deadline and the thread itself.
class StoppableLoop : public TransportThread {
 public:
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

// ---- ranks != 0 ---------------------------------------------------------------------------------

class Sender final : public StoppableLoop {
 public:
  Sender(TransportOptions o, std::shared_ptr<KvClient> store,
         std::shared_ptr<TransportCounters> counters, std::shared_ptr<StopRequest> stop,
         std::function<void(const std::string&)> on_remote_stop,
         std::function<void(const std::string&)> warn)
      : o_(std::move(o)), store_(std::move(store)), counters_(std::move(counters)),
        stop_(std::move(stop)), on_remote_stop_(std::move(on_remote_stop)),
        warn_(std::move(warn)) {
    thread_.start([this] { run(); });
  }

 private:
  void run() {
    std::optional<EncodedSummary> held;
    auto next_poll = Clock::now();
    bool source_closed = false;
    while (!past_deadline()) {
      if (stop_->requested.load()) {  // this rank's probe failed: everyone steps aside
        std::string error;
        store_->set(stop_key(o_), "rank " + std::to_string(o_.rank) + ": " + stop_->reason(),
                    &error);
        return;
      }
      if (!held) {
        if (source_closed) break;
        EncodedSummary s;
        std::string error;
        switch (source_.pop(stopping() ? 0 : 50, &s, &error)) {
          case SummarySource::Status::kOk:
            if (s.step < o_.first_step) continue;  // warm-up: not analysed, not sent
            held = std::move(s);
            break;
          case SummarySource::Status::kEmpty:
            if (stopping()) source_closed = true;  // drained: nothing more will come
            continue;
          case SummarySource::Status::kClosed: source_closed = true; continue;
          case SummarySource::Status::kBad:
            counters_->bad_summaries++;
            warn_once(error);
            continue;
        }
      }
      if (Clock::now() >= next_poll) {
        if (!poll_rank0()) return;
        next_poll = Clock::now() + std::chrono::milliseconds(100);
      }
      // At the end of the job the last few steps go regardless of the ack: they are bounded by
      // the runtime's queue and rank 0 is draining.
      if (!stopping() && held->step > ack_ + o_.max_lag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        counters_->held_back_ms += 10;
        // look for a new ack sooner than usual, but not on every wake-up
        next_poll = std::min(next_poll, Clock::now() + std::chrono::milliseconds(40));
        continue;
      }
      send(*held);
      held.reset();
    }
  }

  // Reads rank 0's ack and stop keys; false when rank 0 stepped aside.
  bool poll_rank0() {
    std::string error;
    if (auto stop = store_->try_get(stop_key(o_), &error)) {
      on_remote_stop_(*stop);
      return false;
    }
    if (auto ack = store_->try_get(ack_key(o_), &error)) {
      if (auto v = parse_store_int(*ack)) ack_ = *v;
    }
    if (!error.empty()) store_error(error);
    return true;
  }

  void send(const EncodedSummary& s) {
    std::string error;
    if (!store_->set(data_key(o_, s.step, o_.rank), s.bytes, &error) ||
        !store_->set(head_key(o_, o_.rank), std::to_string(s.step), &error)) {
      store_error(error);
      return;
    }
    counters_->summaries_sent++;
    counters_->bytes_sent += s.bytes.size();
  }

  void store_error(const std::string& error) {
    counters_->store_errors++;
    // At the end of the job rank 0 (and the store with it) may already be gone: count only.
    if (!stopping()) warn_once("store: " + error);
  }
  void warn_once(const std::string& what) {
    if (!warned_) {
      warned_ = true;
      warn_("straggler_probe transport (rank " + std::to_string(o_.rank) + "): " + what +
            " (further errors are counted, not printed)");
    }
  }

  TransportOptions o_;
  std::shared_ptr<KvClient> store_;
  std::shared_ptr<TransportCounters> counters_;
  std::shared_ptr<StopRequest> stop_;
  std::function<void(const std::string&)> on_remote_stop_;
  std::function<void(const std::string&)> warn_;
  SummarySource source_;
  int64_t ack_ = -1;  // until rank 0's first ack: steps up to max_lag - 1 may go
  bool warned_ = false;
};

// ---- rank 0 -------------------------------------------------------------------------------------

class Collector final : public StoppableLoop {
 public:
  Collector(TransportOptions o, std::shared_ptr<KvClient> store,
            std::shared_ptr<TransportCounters> counters, std::function<void(StepBatch&&)> deliver,
            std::function<void()> watchdog, std::function<void(const std::string&)> warn,
            std::shared_ptr<StopRequest> stop,
            std::function<void(const std::string&)> on_remote_stop)
      : o_(std::move(o)), store_(std::move(store)), counters_(std::move(counters)),
        deliver_(std::move(deliver)), watchdog_(std::move(watchdog)), warn_(std::move(warn)),
        stop_(std::move(stop)), on_remote_stop_(std::move(on_remote_stop)),
        assembler_(online::AssemblyLimits{o_.world_size, online::AssemblyLimits{}.incomplete_lag_steps,
                                          std::max(16, 2 * o_.max_lag + 2), o_.step_timeout}),
        cursor_(static_cast<size_t>(o_.world_size), o_.first_step),
        next_head_check_(static_cast<size_t>(o_.world_size), Clock::now()) {
    thread_.start([this] { run(); });
  }

 private:
  void run() {
    std::string error;
    ack_ = o_.first_step - 1;
    store_->set(ack_key(o_), std::to_string(ack_), &error);
    auto next_stop_check = Clock::now();
    auto idle_sleep = o_.poll;
    while (true) {
      if (stop_->requested.load()) {
        publish_stop();
        return;
      }
      if (Clock::now() >= next_stop_check) {  // another rank's probe may have failed
        next_stop_check = Clock::now() + std::chrono::milliseconds(100);
        if (auto why = store_->try_get(stop_key(o_), &error)) {
          on_remote_stop_(*why);
          return;
        }
      }
      watchdog_();
      bool progress = pull_own();
      for (int r = 1; r < o_.world_size; ++r) progress |= pull_rank(r);
      progress |= settle();
      if (stopping() && (own_closed_ && assembler_.empty() && all_caught_up())) break;
      if (past_deadline()) {
        for (StepBatch& batch : assembler_.take_all()) hand_over(std::move(batch));
        break;
      }
      if (progress) {
        idle_sleep = o_.poll;
      } else {
        std::this_thread::sleep_for(idle_sleep);
        idle_sleep = std::min(o_.max_poll, idle_sleep * 2);
      }
    }
  }

  bool pull_own() {
    bool progress = false;
    for (int i = 0; i < 64 && !own_closed_; ++i) {
      EncodedSummary s;
      std::string error;
      switch (source_.pop(0, &s, &error)) {
        case SummarySource::Status::kOk:
          put(s.step, 0, std::move(s.bytes));
          cursor_[0] = std::max(cursor_[0], s.step + 1);
          progress = true;
          continue;
        case SummarySource::Status::kEmpty:
          if (stopping()) own_closed_ = true;
          return progress;
        case SummarySource::Status::kClosed: own_closed_ = true; return progress;
        case SummarySource::Status::kBad:
          counters_->bad_summaries++;
          warn_once(error);
          continue;
      }
    }
    return progress;
  }

  // Reads rank r's summaries in step order; a step r skipped is passed over once r's head key
  // shows a later step (data is written before head, so a re-check settles the race).
  bool pull_rank(int r) {
    bool progress = false;
    auto& cursor = cursor_[static_cast<size_t>(r)];
    for (int i = 0; i < 64; ++i) {
      std::string error;
      const std::string key = data_key(o_, cursor, r);
      auto value = store_->try_get(key, &error);
      if (!value) {
        if (!error.empty()) return store_error(error), progress;
        if (!skipped_by(r, cursor)) return progress;
        ++cursor;
        progress = true;
        continue;
      }
      store_->remove(key, &error);
      counters_->summaries_received++;
      counters_->bytes_received += value->size();
      put(cursor, r, std::move(*value));
      ++cursor;
      progress = true;
    }
    return progress;
  }

  bool skipped_by(int r, int64_t step) {
    auto& next = next_head_check_[static_cast<size_t>(r)];
    if (Clock::now() < next && !stopping()) return false;
    next = Clock::now() + std::chrono::milliseconds(100);
    std::string error;
    auto head = store_->try_get(head_key(o_, r), &error);
    if (!head) return false;
    auto h = parse_store_int(*head);
    if (!h || *h < step) return false;
    if (store_->try_get(data_key(o_, step, r), &error)) return false;  // it just arrived
    next = Clock::now();  // several skipped steps in a row: check the next one at once
    return true;
  }

  bool all_caught_up() const {
    // Draining: every rank's cursor has passed the last step rank 0 itself produced.
    for (int r = 1; r < o_.world_size; ++r) {
      if (cursor_[static_cast<size_t>(r)] < cursor_[0]) return false;
    }
    return true;
  }

  void put(int64_t step, int rank, std::string bytes) {
    if (step <= ack_) return;  // already given up on (or warm-up)
    assembler_.put(step, rank, std::move(bytes));
  }

  // Hands over, in order, the steps the assembler closed: complete, or given up once every
  // missing rank has moved past them, after step_timeout, or when too many are pending.
  bool settle() {
    for (int r = 0; r < o_.world_size; ++r) assembler_.rank_moved_to(r, cursor_[static_cast<size_t>(r)]);
    std::vector<StepBatch> closed = assembler_.take_ready();
    for (StepBatch& batch : closed) hand_over(std::move(batch));
    if (closed.empty()) return false;
    ack_ = std::max(ack_, *assembler_.last_closed());
    std::string error;
    if (!store_->set(ack_key(o_), std::to_string(ack_), &error)) store_error(error);
    return true;
  }

  void hand_over(StepBatch&& batch) {
    (batch.complete ? counters_->steps_complete : counters_->steps_incomplete)++;
    deliver_(std::move(batch));
  }

  void publish_stop() {
    std::string error;
    store_->set(stop_key(o_), "rank 0: " + stop_->reason(), &error);
  }

  void store_error(const std::string& error) {
    counters_->store_errors++;
    warn_once("store: " + error);
  }
  void warn_once(const std::string& what) {
    if (!warned_) {
      warned_ = true;
      warn_("straggler_probe transport (rank 0): " + what +
            " (further errors are counted, not printed)");
    }
  }

  TransportOptions o_;
  std::shared_ptr<KvClient> store_;
  std::shared_ptr<TransportCounters> counters_;
  std::function<void(StepBatch&&)> deliver_;
  std::function<void()> watchdog_;
  std::function<void(const std::string&)> warn_;
  std::shared_ptr<StopRequest> stop_;
  std::function<void(const std::string&)> on_remote_stop_;
  SummarySource source_;
  online::StepAssembler<std::string> assembler_;  // which steps are complete or given up
  std::vector<int64_t> cursor_;  // per rank: the next step expected from it
  std::vector<Clock::time_point> next_head_check_;
  int64_t ack_ = -1;
  bool own_closed_ = false;
  bool warned_ = false;
};

// ---- transport=none ------------------------------------------------------------------------------

class Discarder final : public StoppableLoop {
 public:
  explicit Discarder(std::shared_ptr<TransportCounters> counters) : counters_(std::move(counters)) {
    thread_.start([this] { run(); });
  }

 private:
  void run() {
    while (!past_deadline()) {
      EncodedSummary s;
      std::string error;
      const auto status = source_.pop(stopping() ? 0 : 50, &s, &error);
      if (status == SummarySource::Status::kOk) {
        counters_->summaries_discarded++;
      } else if (status == SummarySource::Status::kClosed ||
                 (status == SummarySource::Status::kEmpty && stopping())) {
        return;
      }
    }
  }

  std::shared_ptr<TransportCounters> counters_;
  SummarySource source_;
};

}  // namespace

std::unique_ptr<TransportThread> start_discarder(std::shared_ptr<TransportCounters> counters) {
  return std::make_unique<Discarder>(std::move(counters));
}

std::string data_key(const TransportOptions& o, int64_t step, int rank) {
  return o.prefix + "s/" + std::to_string(step) + "/" + std::to_string(rank);
}

std::unique_ptr<TransportThread> start_sender(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::shared_ptr<StopRequest> stop,
    std::function<void(const std::string&)> on_remote_stop,
    std::function<void(const std::string&)> warn) {
  return std::make_unique<Sender>(options, std::move(store), std::move(counters), std::move(stop),
                                  std::move(on_remote_stop), std::move(warn));
}

std::unique_ptr<TransportThread> start_collector(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::function<void(StepBatch&&)> deliver,
    std::function<void()> watchdog, std::function<void(const std::string&)> warn,
    std::shared_ptr<StopRequest> stop, std::function<void(const std::string&)> on_remote_stop) {
  return std::make_unique<Collector>(options, std::move(store), std::move(counters),
                                     std::move(deliver), std::move(watchdog), std::move(warn),
                                     std::move(stop), std::move(on_remote_stop));
}

}  // namespace sp::rank_pipeline
