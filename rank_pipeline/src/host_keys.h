// Store keys and control values of the host-aggregated protocol (transport.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kv_client.h"
#include "transport.h"

namespace sp::rank_pipeline::host {

inline std::string leader_key(const TransportOptions& o, const std::string& host_key) {
  return o.prefix + "host/" + host_key;
}
inline std::string members_key(const TransportOptions& o, const std::string& host_key) {
  return o.prefix + "host/" + host_key + "/n";
}
inline std::string ranks_key(const TransportOptions& o) { return o.prefix + "ranks"; }
inline std::string data_key(const TransportOptions& o, int64_t step) {
  return o.prefix + "d/" + std::to_string(step);
}
inline std::string count_key(const TransportOptions& o, int64_t step) {
  return o.prefix + "n/" + std::to_string(step);
}
inline std::string ctl_key(const TransportOptions& o) { return o.prefix + "ctl"; }

// The ctl key holds rank 0's ack as a decimal number, or "stop <why>" once any rank asked every
// probe to step aside.
struct Control {
  std::optional<int64_t> ack;
  std::optional<std::string> stop;
};
inline Control parse_control(const std::string& value) {
  Control c;
  if (value.rfind("stop ", 0) == 0) c.stop = value.substr(5);
  else c.ack = parse_store_int(value);
  return c;
}
inline std::string stop_value(const std::string& why) { return "stop " + why; }

}  // namespace sp::rank_pipeline::host
