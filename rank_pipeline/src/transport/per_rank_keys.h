// Store keys of the per-rank protocol (transport.h).
#pragma once

#include <cstdint>
#include <string>

#include "transport.h"

namespace sp::rank_pipeline::per_rank {

inline std::string data_key(const TransportOptions& o, int64_t step, int rank) {
  return o.prefix + "s/" + std::to_string(step) + "/" + std::to_string(rank);
}
inline std::string head_key(const TransportOptions& o, int rank) {
  return o.prefix + "h/" + std::to_string(rank);
}
inline std::string row_key(const TransportOptions& o, int rank) {
  return o.prefix + "r/" + std::to_string(rank);
}
inline std::string ack_key(const TransportOptions& o) { return o.prefix + "ack"; }
inline std::string stop_key(const TransportOptions& o) { return o.prefix + "stop"; }

}  // namespace sp::rank_pipeline::per_rank
