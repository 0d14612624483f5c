// Store keys and control values of the host-aggregated protocol (transport.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kv_client.h"
#include "straggler_probe/wire_io.h"
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
// The hosts' heartbeats answering rank 0's ask `round` (hang_watch.h), appended by the leaders.
inline std::string beats_key(const TransportOptions& o, uint64_t round) {
  return o.prefix + "hb/" + std::to_string(round);
}

// Rank 0 suspects hang `episode` and asks every host's leader for its heartbeats (round `round`:
// each leader answers each round once, at its usual reads of ctl).
struct HangAsk {
  uint64_t episode = 0;
  uint64_t round = 0;
};

// The ctl key holds rank 0's ack as a decimal number, followed while rank 0 suspects a hang by
// " hang <episode> <round>"; or "stop <why>" once any rank asked every probe to step aside. The
// ask rides on the key the leaders read anyway: a clean job pays nothing for it.
struct Control {
  std::optional<int64_t> ack;
  std::optional<std::string> stop;
  std::optional<HangAsk> ask;
};
inline Control parse_control(const std::string& value) {
  Control c;
  if (value.rfind("stop ", 0) == 0) {
    c.stop = runtime::wire::printable(std::string_view(value).substr(5));  // it is printed
    return c;
  }
  const size_t hang = value.find(" hang ");
  if (hang == std::string::npos) {
    c.ack = parse_store_int(value);
    return c;
  }
  c.ack = parse_store_int(value.substr(0, hang));
  const std::string rest = value.substr(hang + 6);
  const size_t space = rest.find(' ');
  if (space == std::string::npos) return c;
  const auto episode = parse_store_int(rest.substr(0, space));
  const auto round = parse_store_int(rest.substr(space + 1));
  if (episode && round && *episode > 0 && *round > 0) {
    c.ask = HangAsk{static_cast<uint64_t>(*episode), static_cast<uint64_t>(*round)};
  }
  return c;
}
inline std::string control_value(int64_t ack, const std::optional<HangAsk>& ask) {
  std::string v = std::to_string(ack);
  if (ask) v += " hang " + std::to_string(ask->episode) + " " + std::to_string(ask->round);
  return v;
}
inline std::string stop_value(const std::string& why) { return "stop " + why; }

}  // namespace sp::rank_pipeline::host
