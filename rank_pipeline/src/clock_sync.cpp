#include "clock_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <thread>

namespace sp::rank_pipeline {
namespace {

using Steady = std::chrono::steady_clock;

std::string counter_key(const ClockSyncOptions& o) { return o.prefix + "clk/n"; }
std::string request_key(const ClockSyncOptions& o, int64_t ticket, int i) {
  return o.prefix + "clk/q/" + std::to_string(ticket) + "/" + std::to_string(i);
}
std::string answer_key(const ClockSyncOptions& o, int64_t ticket, int i) {
  return o.prefix + "clk/a/" + std::to_string(ticket) + "/" + std::to_string(i);
}
std::string serving_key(const ClockSyncOptions& o) { return o.prefix + "clk/serving"; }

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

std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ns) / 1e3);
  return buf;
}

std::string ppm(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::string format_clock_result(int rank, const ClockEstimate& e, std::optional<double> skew) {
  std::ostringstream out;
  out << "res " << rank << ' ' << (e.ok ? 1 : 0) << ' ' << e.offset_ns << ' ' << e.uncertainty_ns
      << ' ' << e.rtt_ns << ' ';
  if (skew) out << ppm(*skew);
  else out << "nan";
  return out.str();
}

bool parse_clock_result(const std::string& text, RankClock* out) {
  std::istringstream in(text);
  std::string tag, skew;
  int ok = 0;
  if (!(in >> tag >> out->rank >> ok >> out->offset_ns >> out->uncertainty_ns >> out->rtt_ns >>
        skew) ||
      tag != "res" || (ok != 0 && ok != 1)) {
    return false;
  }
  out->known = ok == 1;
  out->skew_ppm.reset();
  if (skew != "nan") {
    try {
      out->skew_ppm = std::stod(skew);
    } catch (...) {
      return false;
    }
  }
  return true;
}

ClockSync::ClockSync(ClockSyncOptions options, std::shared_ptr<KvClient> store,
                     ClockSyncHooks hooks)
    : o_(std::move(options)), store_(std::move(store)), hooks_(std::move(hooks)) {
  if (o_.rank == 0) {
    table_.resize(static_cast<size_t>(std::max(o_.world_size, 1)));
    for (size_t r = 0; r < table_.size(); ++r) table_[r].rank = static_cast<int>(r);
    table_[0].known = true;  // rank 0 is the reference
    thread_.start([this] { run_server(); });
  } else {
    table_.resize(1);
    table_[0].rank = o_.rank;
    thread_.start([this] { run_client(); });
  }
}

ClockSync::~ClockSync() = default;

void ClockSync::request_stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stop_ = true;
  cv_.notify_all();
}

bool ClockSync::join(std::chrono::milliseconds timeout) { return thread_.join_for(timeout); }

std::vector<RankClock> ClockSync::table() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_;
}

bool ClockSync::sleep_for(std::chrono::nanoseconds d) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (d.count() > 0) cv_.wait_for(lock, d, [&] { return stop_; });
  return !stop_;
}

// ---- ranks != 0 ---------------------------------------------------------------------------------

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
          if (!server) *err = "malformed answer from rank 0: '" + answer->substr(0, 40) + "'";
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
      row.known = true;
      row.offset_ns = estimate.offset_ns;
      row.uncertainty_ns = estimate.uncertainty_ns;
      row.rtt_ns = estimate.rtt_ns;
      row.skew_ppm = skew_ppm;
      ++row.estimates;
    } else if (!stop_) {
      first_failure = row.failures == 0 && !row.known;
      ++row.failures;
      row.error = estimate.error;
    }
  }
  if (first_failure && hooks_.warn) {
    hooks_.warn("straggler_probe: WARNING: rank " + std::to_string(o_.rank) +
                ": clock offset to rank 0 not estimated (" + estimate.error +
                "); its times are compared with rank 0's as if the clocks agreed (offset 0)");
  }
}

// ---- rank 0 -------------------------------------------------------------------------------------

bool ClockSync::serve_request(int64_t ticket, int index, const std::string& value, int* client) {
  if (value.rfind("req ", 0) == 0) {
    const int64_t now = hooks_.clock();  // read first: the set's latency is on the way back
    std::string error;
    store_->set(answer_key(o_, ticket, index), std::to_string(now), &error);
    store_->remove(request_key(o_, ticket, index), &error);
    if (const auto r = parse_store_int(value.substr(4))) *client = static_cast<int>(*r);
    return false;  // the ticket goes on
  }
  std::string error;
  store_->remove(request_key(o_, ticket, index), &error);
  RankClock result;
  if (parse_clock_result(value, &result) && result.rank > 0 &&
      result.rank < static_cast<int>(table_.size())) {
    std::lock_guard<std::mutex> lock(mutex_);
    RankClock& row = table_[static_cast<size_t>(result.rank)];
    if (result.known) {
      row.known = true;
      row.offset_ns = result.offset_ns;
      row.uncertainty_ns = result.uncertainty_ns;
      row.rtt_ns = result.rtt_ns;
      row.skew_ppm = result.skew_ppm;
      ++row.estimates;
    } else {
      ++row.failures;
      row.error = "its estimate failed";
    }
  }
  return true;  // the ticket is done
}

void ClockSync::run_server() {
  const auto started = Steady::now();
  int64_t ticket = 1;
  int index = 0;
  int client = -1;
  auto waiting_since = Steady::now();
  auto idle = std::chrono::milliseconds(1);
  int64_t unused_ticket = 0;
  int64_t announced = 0;
  auto next_report = Steady::now();
  while (true) {
    if (index == 0 && Steady::now() >= next_report) {
      maybe_report(started);
      next_report = Steady::now() + std::chrono::milliseconds(200);
    }
    std::string error;
    if (index == 0 && ticket != announced) {  // the waiting clients pace their polls by it
      announced = ticket;
      store_->set(serving_key(o_), std::to_string(ticket), &error);
    }
    const std::optional<std::string> value = store_->try_get(request_key(o_, ticket, index), &error);
    if (value) {
      if (serve_request(ticket, index, *value, &client)) {
        ++ticket;
        index = 0;
        client = -1;
        idle = std::chrono::milliseconds(1);
      } else {
        ++index;
      }
      waiting_since = Steady::now();
      if (!sleep_for(std::chrono::nanoseconds(0))) return;
      continue;
    }
    if (!error.empty()) {
      if (!store_warned_ && hooks_.warn) {
        store_warned_ = true;
        hooks_.warn("straggler_probe: WARNING: clock offset estimation: the store failed (" +
                    error + "); retrying every second");
      }
      if (!sleep_for(std::chrono::seconds(1))) return;
      continue;
    }
    const bool overdue = Steady::now() - waiting_since > o_.server_timeout;
    if (index > 0) {  // mid-ticket: the client is expected within a few store round trips
      if (overdue) {
        if (client > 0 && client < static_cast<int>(table_.size())) {
          std::lock_guard<std::mutex> lock(mutex_);
          ++table_[static_cast<size_t>(client)].failures;
          table_[static_cast<size_t>(client)].error = "stopped sending requests";
        }
        ++ticket;
        index = 0;
        client = -1;
        waiting_since = Steady::now();
      } else if (!sleep_for(std::chrono::microseconds(20))) {
        return;
      }
      continue;
    }
    if (overdue) {
      // A ticket taken but never used (its rank died between the two store calls): skipped once
      // it was seen issued and unused at two checks in a row.
      waiting_since = Steady::now();
      const std::optional<int64_t> issued = store_->add(counter_key(o_), 0, &error);
      if (issued && *issued >= ticket) {
        if (unused_ticket == ticket) ++ticket;
        else unused_ticket = ticket;
      }
    }
    if (!sleep_for(idle)) return;
    idle = std::min(idle * 2, std::chrono::milliseconds(100));
  }
}

void ClockSync::maybe_report(Steady::time_point started) {
  std::vector<RankClock> rows;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (start_line_done_ && skew_line_done_ && uncertainty_warned_) return;
    rows = table_;
  }
  int known = 0, with_skew = 0, worst_offset = 0, worst_skew = 0;
  int64_t max_offset = 0, max_unc = 0;
  double max_skew = 0;
  std::string missing;
  for (const RankClock& r : rows) {
    if (r.rank == 0) continue;
    if (!r.known) {
      if (!missing.empty()) missing += ',';
      missing += std::to_string(r.rank);
      continue;
    }
    ++known;
    if (std::llabs(r.offset_ns) >= max_offset) {
      max_offset = std::llabs(r.offset_ns);
      worst_offset = r.rank;
    }
    max_unc = std::max(max_unc, r.uncertainty_ns);
    if (r.skew_ppm) {
      ++with_skew;
      if (std::fabs(*r.skew_ppm) >= max_skew) {
        max_skew = std::fabs(*r.skew_ppm);
        worst_skew = r.rank;
      }
    }
  }
  const int others = static_cast<int>(rows.size()) - 1;
  std::vector<std::string> lines, warnings;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!start_line_done_ && (known == others || Steady::now() - started > o_.start_line_after)) {
      start_line_done_ = true;
      std::string line = "straggler_probe clock offsets to rank 0: max |offset| " + us(max_offset) +
                         " us (rank " + std::to_string(worst_offset) + "), uncertainty <= " +
                         us(max_unc) + " us, skew ";
      line += with_skew == others && others > 0
                  ? ppm(max_skew) + " ppm"
                  : "not measured yet (next estimate in " +
                        std::to_string(o_.period.count() / 1000) + " s)";
      if (!missing.empty()) line += "; no estimate from rank(s) " + missing + " (offset 0 used)";
      lines.push_back(line);
    }
    if (start_line_done_ && !skew_line_done_ && others > 0 && with_skew == others) {
      skew_line_done_ = true;
      lines.push_back("straggler_probe clock skew to rank 0: max |skew| " + ppm(max_skew) +
                      " ppm (rank " + std::to_string(worst_skew) + "), max |offset| " +
                      us(max_offset) + " us, uncertainty <= " + us(max_unc) + " us");
    }
    const double step_s = hooks_.step_seconds ? hooks_.step_seconds() : 0.0;
    if (!uncertainty_warned_ && known > 0 && step_s > 0 &&
        static_cast<double>(max_unc) > o_.warn_share_of_step * step_s * 1e9) {
      uncertainty_warned_ = true;
      char share[32];
      std::snprintf(share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(max_unc) / (step_s * 1e9));
      warnings.push_back("straggler_probe: WARNING: clock offsets to rank 0 are uncertain by up "
                         "to " + us(max_unc) + " us, " + share + " of a step (" +
                         us(static_cast<int64_t>(step_s * 1e9)) +
                         " us): waits across ranks shorter than that are not told apart");
    }
  }
  for (const std::string& l : lines) {
    if (hooks_.print) hooks_.print(l);
  }
  for (const std::string& w : warnings) {
    if (hooks_.warn) hooks_.warn(w);
  }
}

}  // namespace sp::rank_pipeline
