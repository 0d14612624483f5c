// Rank 0, per-rank protocol (transport.h): reads every rank's summary key of every step.
#include <algorithm>
#include <map>
#include <thread>

#include "per_rank_keys.h"
#include "straggler_probe/wire_io.h"
#include "transport_loop.h"

namespace sp::rank_pipeline {
namespace {

using namespace per_rank;
using Clock = std::chrono::steady_clock;

class PerRankCollector final : public StoppableLoop {
 public:
  explicit PerRankCollector(TransportContext c)
      : c_(std::move(c)), warning_(0, c_.warn),
        cursor_(static_cast<size_t>(c_.o.world_size), c_.o.first_step),
        next_head_check_(static_cast<size_t>(c_.o.world_size), Clock::now()),
        table_(static_cast<size_t>(c_.o.world_size)) {
    table_[0] = c_.o.identity;
    table_[0].rank = 0;
    c_.counters->protocol = 2;
    thread_.start("sp_collector", [this] { run(); });
  }

 private:
  struct Slot {
    std::vector<std::string> by_rank;
    int have = 0;
    Clock::time_point first_seen;
  };

  void run() {
    std::string error;
    ack_ = c_.o.first_step - 1;
    c_.store->set(ack_key(c_.o), std::to_string(ack_), &error);
    auto next_stop_check = Clock::now();
    auto idle_sleep = c_.o.poll;
    while (true) {
      if (c_.stop->requested.load()) {
        c_.store->set(stop_key(c_.o), "rank 0: " + c_.stop->reason(), &error);
        return;
      }
      if (Clock::now() >= next_stop_check) {  // another rank's probe may have failed
        next_stop_check = Clock::now() + std::chrono::milliseconds(100);
        if (auto why = c_.store->try_get(stop_key(c_.o), &error)) {
          c_.on_remote_stop(runtime::wire::printable(*why));  // printed
          return;
        }
        read_rank_rows();
      }
      c_.watchdog();
      bool progress = pull_own();
      for (int r = 1; r < c_.o.world_size; ++r) progress |= pull_rank(r);
      progress |= settle();
      if (stopping() && (own_closed_ && slots_.empty() && all_caught_up())) break;
      if (past_deadline()) {
        give_up_all();
        break;
      }
      if (progress) {
        idle_sleep = c_.o.poll;
      } else {
        std::this_thread::sleep_for(idle_sleep);
        idle_sleep = std::min(c_.o.max_poll, idle_sleep * 2);
      }
    }
  }

  bool pull_own() {
    bool progress = false;
    for (int i = 0; i < 64 && !own_closed_; ++i) {
      EncodedSummary s;
      std::string error;
      switch (c_.o.source->pop(0, &s, &error)) {
        case SummarySource::Status::kOk:
          if (s.step < c_.o.first_step) continue;
          put(s.step, 0, std::move(s.bytes));
          cursor_[0] = std::max(cursor_[0], s.step + 1);
          progress = true;
          continue;
        case SummarySource::Status::kEmpty:
          if (stopping()) own_closed_ = true;
          return progress;
        case SummarySource::Status::kClosed: own_closed_ = true; return progress;
        case SummarySource::Status::kBad:
          c_.counters->bad_summaries++;
          warning_(error);
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
      const std::string key = data_key(c_.o, cursor, r);
      auto value = c_.store->try_get(key, &error);
      if (!value) {
        if (!error.empty()) return store_error(error), progress;
        if (!skipped_by(r, cursor)) return progress;
        ++cursor;
        progress = true;
        continue;
      }
      c_.store->remove(key, &error);
      c_.counters->summaries_received++;
      c_.counters->bytes_received += value->size();
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
    auto head = c_.store->try_get(head_key(c_.o, r), &error);
    if (!head) return false;
    auto h = parse_store_int(*head);
    if (!h || *h < step) return false;
    if (c_.store->try_get(data_key(c_.o, step, r), &error)) return false;  // it just arrived
    next = Clock::now();  // several skipped steps in a row: check the next one at once
    return true;
  }

  // The rank table, a few rows per pass until every rank's is in (each row is read once).
  void read_rank_rows() {
    for (int tries = 0; tries < 64 && rows_next_ < c_.o.world_size; ++tries) {
      const int r = rows_next_;
      if (!table_[static_cast<size_t>(r)].host.empty()) {
        ++rows_next_;
        continue;
      }
      std::string error;
      const auto row = c_.store->try_get(row_key(c_.o, r), &error);
      if (!row) return;  // not written yet: try again at the next pass
      if (parse_rank_rows(*row, &table_, &error) != 0) {
        c_.counters->bad_host_messages++;
        warning_(error);
        table_[static_cast<size_t>(r)].host = "unknown";
      }
      table_changed_ = true;
      ++rows_next_;
    }
  }

  bool all_caught_up() const {
    // Draining: every rank's cursor has passed the last step rank 0 itself produced.
    for (int r = 1; r < c_.o.world_size; ++r) {
      if (cursor_[static_cast<size_t>(r)] < cursor_[0]) return false;
    }
    return true;
  }

  void put(int64_t step, int rank, std::string bytes) {
    if (step <= ack_) return;  // already given up on
    auto& slot = slots_[step];
    if (slot.by_rank.empty()) {
      slot.by_rank.resize(static_cast<size_t>(c_.o.world_size));
      slot.first_seen = Clock::now();
    }
    auto& dst = slot.by_rank[static_cast<size_t>(rank)];
    if (dst.empty()) ++slot.have;
    dst = std::move(bytes);
  }

  // Hands over complete steps and gives up on steps no rank can complete any more, in order.
  bool settle() {
    bool progress = false;
    while (!slots_.empty()) {
      auto it = slots_.begin();
      const int64_t step = it->first;
      Slot& slot = it->second;
      const bool complete = slot.have == c_.o.world_size;
      bool passed = true;  // every missing rank has moved past this step
      for (int r = 0; r < c_.o.world_size; ++r) {
        if (slot.by_rank[static_cast<size_t>(r)].empty() && cursor_[static_cast<size_t>(r)] <= step)
          passed = false;
      }
      const bool timed_out = Clock::now() - slot.first_seen > c_.o.step_timeout;
      if (!complete && !passed && !timed_out) break;
      hand_over(step, std::move(slot), complete);
      slots_.erase(it);
      progress = true;
    }
    if (progress) {
      std::string error;
      if (!c_.store->set(ack_key(c_.o), std::to_string(ack_), &error)) store_error(error);
    }
    return progress;
  }

  void hand_over(int64_t step, Slot&& slot, bool complete) {
    StepBatch batch;
    batch.step = step;
    batch.complete = complete;
    for (int r = 0; r < c_.o.world_size; ++r) {
      if (slot.by_rank[static_cast<size_t>(r)].empty()) {
        if (!batch.missing.empty()) batch.missing += ",";
        batch.missing += std::to_string(r);
      }
    }
    batch.by_rank = std::move(slot.by_rank);
    if (table_changed_) {
      batch.rank_table = std::make_shared<const std::vector<RankInfo>>(table_);
      table_changed_ = false;
    }
    (complete ? c_.counters->steps_complete : c_.counters->steps_incomplete)++;
    ack_ = std::max(ack_, step);
    c_.deliver(std::move(batch));
  }

  void give_up_all() {
    while (!slots_.empty()) {
      auto it = slots_.begin();
      hand_over(it->first, std::move(it->second), it->second.have == c_.o.world_size);
      slots_.erase(it);
    }
  }

  // Counted; a store that keeps failing is said once, when lost (kv_client.h).
  void store_error(const std::string&) { c_.counters->store_errors++; }

  TransportContext c_;
  TransportWarning warning_;
  std::vector<int64_t> cursor_;  // per rank: the next step expected from it
  std::vector<Clock::time_point> next_head_check_;
  std::map<int64_t, Slot> slots_;
  std::vector<RankInfo> table_;
  int rows_next_ = 1;  // the next rank whose row is read
  bool table_changed_ = true;
  int64_t ack_ = -1;
  bool own_closed_ = false;
};

}  // namespace

std::unique_ptr<TransportThread> start_per_rank_collector(TransportContext context) {
  return std::make_unique<PerRankCollector>(std::move(context));
}

}  // namespace sp::rank_pipeline
