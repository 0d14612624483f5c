#include "clock_sync.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "clock_sync_protocol.h"

// The clock-offset protocol's shared half: the result message and the thread's lifecycle. What
// the ranks != 0 do is in clock_sync_client.cpp, rank 0's side in clock_sync_server.cpp.

namespace sp::rank_pipeline {

std::string format_clock_result(int rank, const ClockEstimate& e, std::optional<double> skew) {
  std::ostringstream out;
  out << "res " << rank << ' ' << (e.ok ? 1 : 0) << ' ' << e.offset_ns << ' ' << e.uncertainty_ns
      << ' ' << e.rtt_ns << ' ';
  if (skew) out << format_ppm(*skew);
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
  // Another process's numbers, printed in rank 0's lines and report.json: |offset| (llabs) and
  // the skew must be numbers those can print.
  constexpr int64_t kMaxNs = int64_t{1} << 62;
  if (out->offset_ns <= -kMaxNs || out->offset_ns >= kMaxNs || out->uncertainty_ns < 0 ||
      out->rtt_ns < 0) {
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
    if (!std::isfinite(*out->skew_ppm)) return false;
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
    thread_.start("sp_clock_server", [this] { run_server(); });
  } else {
    table_.resize(1);
    table_[0].rank = o_.rank;
    thread_.start("sp_clock_sync", [this] { run_client(); });
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

}  // namespace sp::rank_pipeline
