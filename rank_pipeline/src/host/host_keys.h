// Store keys and control values of the host-aggregated protocol (transport.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "store/kv_client.h"
#include "straggler_probe/wire_io.h"
#include "transport/transport.h"

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
// " hang <episode> <round>", then once /control paused or resumed recording by
// " rec <generation> <1 paused | 0 recording>" (transport.h's RecordingNotice); or "stop <why>"
// once any rank asked every probe to step aside. The ask and the notice ride on the key the
// leaders read anyway: a clean job pays nothing for them. A value without " rec " (written
// before any pause) is generation 0.
struct Control {
  std::optional<int64_t> ack;
  std::optional<std::string> stop;
  std::optional<HangAsk> ask;
  std::optional<RecordingNotice> recording;
};
// "<generation> <0|1>": nullopt unless both parse (generation > 0).
inline std::optional<RecordingNotice> parse_recording(const std::string& text) {
  const size_t space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const auto generation = parse_store_int(text.substr(0, space));
  const std::string state = text.substr(space + 1);
  if (!generation || *generation <= 0 || (state != "0" && state != "1")) return std::nullopt;
  return RecordingNotice{static_cast<uint64_t>(*generation), state == "1"};
}
inline Control parse_control(const std::string& whole) {
  Control c;
  if (whole.rfind("stop ", 0) == 0) {
    c.stop = runtime::wire::printable(std::string_view(whole).substr(5));  // it is printed
    return c;
  }
  std::string value = whole;
  if (const size_t rec = value.find(" rec "); rec != std::string::npos) {
    c.recording = parse_recording(value.substr(rec + 5));
    value.resize(rec);
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
inline std::string control_value(int64_t ack, const std::optional<HangAsk>& ask,
                                 const std::optional<RecordingNotice>& recording = std::nullopt) {
  std::string v = std::to_string(ack);
  if (ask) v += " hang " + std::to_string(ask->episode) + " " + std::to_string(ask->round);
  if (recording && recording->generation > 0) {
    v += " rec " + std::to_string(recording->generation) + (recording->paused ? " 1" : " 0");
  }
  return v;
}
inline std::string stop_value(const std::string& why) { return "stop " + why; }

// The payload of frame kRecording (local_channel.h): u64 generation (> 0), u8 paused (0 or 1),
// nothing else; decoded strictly (anything else is not ours and is dropped, counted).
inline std::string recording_frame(const RecordingNotice& n) {
  std::string payload;
  runtime::wire::Writer w(&payload);
  w.u64(n.generation);
  w.u8(n.paused ? 1 : 0);
  return payload;
}
inline std::optional<RecordingNotice> parse_recording_frame(std::string_view payload) {
  runtime::wire::Reader r(payload, 0);
  uint64_t generation = 0;
  uint8_t paused = 0;
  if (!r.u64(&generation) || !r.u8(&paused) || r.remaining() != 0 || generation == 0 ||
      paused > 1) {
    return std::nullopt;
  }
  return RecordingNotice{generation, paused == 1};
}

}  // namespace sp::rank_pipeline::host
