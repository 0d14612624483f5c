// Rank 0, per-rank protocol (transport.h): reads every rank's summary key of every step. Which
// steps are complete or given up is the StepAssembler's decision (step_assembly.h), as for
// analyze-dir and OnlineAnalyzer::add: complete, every missing rank moved past it (its cursor),
// the step timeout, or the end of the run. Its other two rules stay off here: the ack protocol
// already bounds the pending steps (no rank sends beyond ack + max_lag), and a step is not given
// up because a later one completed (a rank's keys are read in step order, so a late rank's step
// is read before its later ones).
#include <algorithm>
#include <limits>
#include <thread>

#include "per_rank_keys.h"
#include "straggler_probe/online/step_assembly.h"
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
        assembler_(assembly_limits(c_.o)),
        table_(static_cast<size_t>(c_.o.world_size)) {
    table_[0] = c_.o.identity;
    table_[0].rank = 0;
    c_.counters->protocol = 2;
    thread_.start("sp_collector", [this] { run(); });
  }

 private:
  using Assembler = online::StepAssembler<std::string>;

  static online::AssemblyLimits assembly_limits(const TransportOptions& o) {
    online::AssemblyLimits limits;
    limits.world_size = o.world_size;
    limits.incomplete_lag_steps = std::numeric_limits<int>::max();  // off: see the top
    limits.max_pending_steps = std::numeric_limits<int>::max();     // off: the ack bounds it
    limits.step_timeout = o.step_timeout;
    return limits;
  }

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
      if (stopping() && (own_closed_ && assembler_.empty() && all_caught_up())) break;
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
          assembler_.rank_moved_to(0, cursor_[0]);
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
        assembler_.rank_moved_to(r, ++cursor);
        progress = true;
        continue;
      }
      c_.store->remove(key, &error);
      c_.counters->summaries_received++;
      c_.counters->bytes_received += value->size();
      put(cursor, r, std::move(*value));
      assembler_.rank_moved_to(r, ++cursor);
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
    // Late (already given up on) or a second copy: the assembler keeps what it had.
    (void)assembler_.put(step, rank, std::move(bytes));
  }

  // Hands over, in order, the steps that are complete or that no rank can complete any more.
  bool settle() {
    std::vector<Assembler::Closed> closed = assembler_.take_ready();
    for (Assembler::Closed& step : closed) hand_over(std::move(step));
    if (closed.empty()) return false;
    std::string error;
    if (!c_.store->set(ack_key(c_.o), std::to_string(ack_), &error)) store_error(error);
    return true;
  }

  void hand_over(Assembler::Closed&& step) {
    StepBatch batch;
    batch.step = step.step;
    batch.complete = step.complete;
    batch.why_incomplete = std::move(step.why_incomplete);
    for (int r : step.missing) {
      if (!batch.missing.empty()) batch.missing += ",";
      batch.missing += std::to_string(r);
    }
    batch.by_rank.reserve(step.by_rank.size());
    for (std::optional<std::string>& bytes : step.by_rank) {
      batch.by_rank.push_back(bytes ? std::move(*bytes) : std::string());
    }
    if (table_changed_) {
      batch.rank_table = std::make_shared<const std::vector<RankInfo>>(table_);
      table_changed_ = false;
    }
    (step.complete ? c_.counters->steps_complete : c_.counters->steps_incomplete)++;
    ack_ = std::max(ack_, step.step);
    c_.deliver(std::move(batch));
  }

  void give_up_all() {
    for (Assembler::Closed& step : assembler_.take_all()) hand_over(std::move(step));
  }

  // Counted; a store that keeps failing is said once, when lost (kv_client.h).
  void store_error(const std::string&) { c_.counters->store_errors++; }

  TransportContext c_;
  TransportWarning warning_;
  std::vector<int64_t> cursor_;  // per rank: the next step expected from it
  std::vector<Clock::time_point> next_head_check_;
  Assembler assembler_;  // the steps read so far, by rank, until complete or given up
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
