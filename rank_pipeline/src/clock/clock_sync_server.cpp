// The clock-offset protocol on rank 0: serve the tickets in order (answer each request with the
// clock, take each client's result into the table), skip tickets whose rank went away, and print
// the start-up and skew lines once.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "clock_sync.h"
#include "clock_sync_protocol.h"
#include "straggler_probe/output_line.h"

namespace sp::rank_pipeline {
namespace {

using Steady = std::chrono::steady_clock;
using namespace clock_keys;

std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ns) / 1e3);
  return buf;
}

}  // namespace

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
      record_estimate(&row, result.offset_ns, result.uncertainty_ns, result.rtt_ns, result.skew_ppm);
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
    if (!error.empty()) {  // retried; a store that keeps failing is said once, when lost
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
                  ? format_ppm(max_skew) + " ppm"
                  : "not measured yet (next estimate in " +
                        std::to_string(o_.period.count() / 1000) + " s)";
      if (!missing.empty()) line += "; no estimate from rank(s) " + missing + " (offset 0 used)";
      lines.push_back(line);
    }
    if (start_line_done_ && !skew_line_done_ && others > 0 && with_skew == others) {
      skew_line_done_ = true;
      lines.push_back("straggler_probe clock skew to rank 0: max |skew| " + format_ppm(max_skew) +
                      " ppm (rank " + std::to_string(worst_skew) + "), max |offset| " +
                      us(max_offset) + " us, uncertainty <= " + us(max_unc) + " us");
    }
    const double step_s = hooks_.step_seconds ? hooks_.step_seconds() : 0.0;
    if (!uncertainty_warned_ && known > 0 && step_s > 0 &&
        static_cast<double>(max_unc) > o_.warn_share_of_step * step_s * 1e9) {
      uncertainty_warned_ = true;
      char share[32];
      std::snprintf(share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(max_unc) / (step_s * 1e9));
      warnings.push_back(std::string(runtime::kWarningLinePrefix) + "clock offsets to rank 0 are uncertain by up to " +
                         us(max_unc) + " us, " + share + " of a step (" +
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
