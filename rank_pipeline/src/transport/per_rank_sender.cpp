// Ranks other than 0, per-rank protocol (transport.h): each summary is one store key.
#include <algorithm>
#include <optional>
#include <thread>

#include "per_rank_keys.h"
#include "straggler_probe/wire_io.h"
#include "transport_loop.h"

namespace sp::rank_pipeline {
namespace {

using namespace per_rank;
using Clock = std::chrono::steady_clock;

class PerRankSender final : public StoppableLoop {
 public:
  explicit PerRankSender(TransportContext c)
      : c_(std::move(c)), warning_(c_.o.rank, c_.warn) {
    c_.counters->protocol = 2;
    thread_.start("sp_transport", [this] { run(); });
  }

 private:
  void run() {
    std::string error;
    RankInfo row = c_.o.identity;
    row.rank = c_.o.rank;
    if (!c_.store->set(row_key(c_.o, c_.o.rank), encode_rank_row(row), &error)) store_error(error);
    std::optional<EncodedSummary> held;
    auto next_poll = Clock::now();
    bool source_closed = false;
    while (!past_deadline()) {
      if (c_.stop->requested.load()) {  // this rank's probe failed: everyone steps aside
        c_.store->set(stop_key(c_.o), "rank " + std::to_string(c_.o.rank) + ": " + c_.stop->reason(),
                      &error);
        return;
      }
      if (!held) {
        if (source_closed) break;
        EncodedSummary s;
        switch (c_.o.source->pop(stopping() ? 0 : 50, &s, &error)) {
          case SummarySource::Status::kOk:
            if (s.step < c_.o.first_step) continue;  // warm-up: not analysed, not sent
            held = std::move(s);
            break;
          case SummarySource::Status::kEmpty:
            if (stopping()) source_closed = true;  // drained: nothing more will come
            continue;
          case SummarySource::Status::kClosed: source_closed = true; continue;
          case SummarySource::Status::kBad:
            c_.counters->bad_summaries++;
            warning_(error);
            continue;
        }
      }
      if (Clock::now() >= next_poll) {
        if (!poll_rank0()) return;
        next_poll = Clock::now() + std::chrono::milliseconds(100);
      }
      // At the end of the job the last few steps go regardless of the ack: they are bounded by
      // the runtime's queue and rank 0 is draining.
      if (!stopping() && held->step > ack_ + c_.o.max_lag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        c_.counters->held_back_ms += 10;
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
    if (auto stop = c_.store->try_get(stop_key(c_.o), &error)) {
      c_.on_remote_stop(runtime::wire::printable(*stop));
      return false;
    }
    if (auto ack = c_.store->try_get(ack_key(c_.o), &error)) {
      if (auto v = parse_store_int(*ack)) ack_ = *v;
    }
    if (!error.empty()) store_error(error);
    return true;
  }

  void send(const EncodedSummary& s) {
    std::string error;
    if (!c_.store->set(data_key(c_.o, s.step, c_.o.rank), s.bytes, &error) ||
        !c_.store->set(head_key(c_.o, c_.o.rank), std::to_string(s.step), &error)) {
      store_error(error);
      return;
    }
    c_.counters->summaries_sent++;
    c_.counters->bytes_sent += s.bytes.size();
  }

  // Counted; a store that keeps failing is said once, when lost (kv_client.h). (At the end of
  // the job rank 0, and the store with it, may already be gone.)
  void store_error(const std::string&) { c_.counters->store_errors++; }

  TransportContext c_;
  TransportWarning warning_;
  int64_t ack_ = -1;  // until rank 0's first ack: steps up to max_lag - 1 may go
};

}  // namespace

std::unique_ptr<TransportThread> start_per_rank_sender(TransportContext context) {
  return std::make_unique<PerRankSender>(std::move(context));
}

}  // namespace sp::rank_pipeline
