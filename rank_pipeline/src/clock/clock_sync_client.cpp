// The clock-offset protocol on ranks != 0: take a ticket, time up to N requests against rank 0's
// answers, apply the best estimate, report it, and follow the skew until the next round.
#include <algorithm>
#include <optional>

#include "clock_sync.h"
#include "clock_sync_protocol.h"
#include "straggler_probe/output_line.h"

namespace sp::rank_pipeline {
namespace {

using Steady = std::chrono::steady_clock;
using namespace clock_keys;

// How long a client waits before looking again for its first answer: in proportion to the
// tickets ahead of it (rank 0 serves one at a time, a few ms each), so that thousands of waiting
// ranks do not poll the job's store every few milliseconds.
std::chrono::microseconds first_answer_backoff(KvClient& store, const ClockSyncOptions& o,
                                               int64_t ticket, std::chrono::microseconds last) {
  constexpr auto kPerTicketAhead = std::chrono::microseconds(2000);
  std::string error;
  const auto serving = store.try_get(serving_key(o), &error);
  const std::optional<int64_t> now_serving = serving ? parse_store_int(*serving) : std::nullopt;
  if (!now_serving) {  // rank 0 has served nobody yet: back off as before
    return std::min<std::chrono::microseconds>(std::max(last * 2, std::chrono::microseconds(500)),
                                               std::chrono::milliseconds(50));
  }
  const int64_t ahead = std::max<int64_t>(0, ticket - *now_serving);
  return std::clamp<std::chrono::microseconds>(kPerTicketAhead * ahead, std::chrono::microseconds(500),
                                               std::chrono::milliseconds(1000));
}

}  // namespace

void ClockSync::run_client() {
  // Between estimates the offset drifts by the skew: follow it every second, so that a summary
  // carries the offset of its own time rather than of the last estimate (one atomic store).
  constexpr auto kProjectEvery = std::chrono::seconds(1);
  SkewTracker skew;
  while (true) {
    client_round(&skew);
    const Steady::time_point next = Steady::now() + o_.period;
    for (Steady::time_point now = Steady::now(); now < next; now = Steady::now()) {
      if (!sleep_for(std::min<Steady::duration>(kProjectEvery, next - now))) return;
      const std::optional<int64_t> projected = skew.projected_offset(hooks_.clock());
      if (projected && hooks_.apply) hooks_.apply(*projected);
    }
  }
}

void ClockSync::client_round(SkewTracker* skew) {
  std::string error;
  const std::optional<int64_t> ticket = store_->add(counter_key(o_), 1, &error);
  ClockEstimate estimate;
  int sent = 0;
  if (ticket) {
    // Each request is one set and then polls for the answer; nothing else happens between the
    // two clock reads (the answers are deleted afterwards), so the round trip stays tight.
    auto request = [&](int i, Steady::time_point deadline,
                       std::string* err) -> std::optional<int64_t> {
      if (!store_->set(request_key(o_, *ticket, i), "req " + std::to_string(o_.rank), err)) {
        return std::nullopt;
      }
      sent = i + 1;
      auto backoff = std::chrono::microseconds(0);
      while (true) {
        const std::optional<std::string> answer = store_->try_get(answer_key(o_, *ticket, i), err);
        if (answer) {
          const std::optional<int64_t> server = parse_store_int(*answer);
          if (!server) {  // named by its length, never echoed: the bytes are another process's
            *err = "malformed answer from rank 0 (" + std::to_string(answer->size()) +
                   " bytes, not a decimal clock reading)";
          }
          return server;
        }
        if (!err->empty()) return std::nullopt;
        if (Steady::now() >= deadline) {
          *err = "no answer from rank 0 within " +
                 std::to_string(i == 0 ? o_.estimator.first_timeout.count()
                                       : o_.estimator.budget.count()) + " ms";
          return std::nullopt;
        }
        // The first answer may be queued behind other ranks: back off. Later ones come within
        // a few store round trips, as rank 0 is now polling for this client.
        if (i == 0) backoff = first_answer_backoff(*store_, o_, *ticket, backoff);
        if (!sleep_for(backoff)) {
          *err = "stopping";
          return std::nullopt;
        }
      }
    };
    estimate = estimate_clock_offset(o_.estimator, hooks_.clock, request);
    for (int i = 0; i < sent; ++i) {
      std::string ignored;
      store_->remove(answer_key(o_, *ticket, i), &ignored);
    }
  } else {
    estimate.error = "cannot take a ticket from the store: " + error;
  }
  if (estimate.ok) {
    skew->add(estimate);
    if (hooks_.apply) hooks_.apply(estimate.offset_ns);
  }
  const std::optional<double> skew_ppm = skew->ppm();
  if (ticket) {
    std::string ignored;  // rank 0 reads it after the last request it answered
    store_->set(request_key(o_, *ticket, sent), format_clock_result(o_.rank, estimate, skew_ppm),
                &ignored);
  }
  bool first_failure = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RankClock& row = table_[0];
    if (estimate.ok) {
      record_estimate(&row, estimate.offset_ns, estimate.uncertainty_ns, estimate.rtt_ns, skew_ppm);
    } else if (!stop_) {
      first_failure = row.failures == 0 && !row.known;
      ++row.failures;
      row.error = estimate.error;
    }
  }
  // A lost store is said once, by whoever lost it (kv_client.h).
  if (first_failure && hooks_.warn && !store_->lost()) {
    hooks_.warn(std::string(runtime::kWarningLinePrefix) + "rank " + std::to_string(o_.rank) +
                ": clock offset to rank 0 not estimated (" + estimate.error +
                "); its times are compared with rank 0's as if the clocks agreed (offset 0)");
  }
}

}  // namespace sp::rank_pipeline
