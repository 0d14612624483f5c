// What the client (clock_sync_client.cpp) and rank 0's server (clock_sync_server.cpp) of the
// clock-offset protocol share: the store keys (their layout is in clock_sync.h), the skew's
// format and how an estimate enters a rank's row.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "clock_sync.h"

namespace sp::rank_pipeline::clock_keys {

inline std::string counter_key(const ClockSyncOptions& o) { return o.prefix + "clk/n"; }
inline std::string request_key(const ClockSyncOptions& o, int64_t ticket, int i) {
  return o.prefix + "clk/q/" + std::to_string(ticket) + "/" + std::to_string(i);
}
inline std::string answer_key(const ClockSyncOptions& o, int64_t ticket, int i) {
  return o.prefix + "clk/a/" + std::to_string(ticket) + "/" + std::to_string(i);
}
inline std::string serving_key(const ClockSyncOptions& o) { return o.prefix + "clk/serving"; }

}  // namespace sp::rank_pipeline::clock_keys

namespace sp::rank_pipeline {

// Skew in the result message and in rank 0's lines: two decimals of ppm.
inline std::string format_ppm(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A successful estimate (the client's own, or one a client reported to rank 0) enters its row.
inline void record_estimate(RankClock* row, int64_t offset_ns, int64_t uncertainty_ns,
                            int64_t rtt_ns, std::optional<double> skew_ppm) {
  row->known = true;
  row->offset_ns = offset_ns;
  row->uncertainty_ns = uncertainty_ns;
  row->rtt_ns = rtt_ns;
  row->skew_ppm = skew_ppm;
  ++row->estimates;
}

}  // namespace sp::rank_pipeline
