#include "heartbeat.h"

#include <algorithm>

#include "straggler_probe/op_kinds.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline {
namespace {

using runtime::wire::Reader;
using runtime::wire::Writer;

constexpr char kMagic[4] = {'S', 'P', 'H', 'B'};
constexpr uint8_t kVersion = 1;
// Bounds on what another process may claim: ages beyond a year, steps beyond 2^50, a step with
// more events than the runtime's cap are not a heartbeat.
constexpr int64_t kMaxAgeMs = 366LL * 24 * 3600 * 1000;
constexpr int64_t kMaxStep = int64_t{1} << 50;
constexpr uint64_t kMaxEventsInStep = 1u << 24;

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

void put_heartbeat(Writer& w, const Heartbeat& hb) {
  w.svarint(hb.last_marked_step);
  w.svarint(hb.mark_age_ms);
  w.u8(hb.has_event ? 1 : 0);
  if (hb.has_event) {
    w.varint(hb.kind);
    w.varint(hb.coll);
    w.svarint(hb.microbatch);
    w.svarint(hb.event_step);
    w.svarint(hb.event_age_ms);
    w.str(std::string_view(hb.name).substr(0, kMaxHeartbeatName));
  }
  w.varint(hb.events_in_step);
}

// "" when whole and within bounds, else what is wrong.
std::string get_heartbeat(Reader& r, Heartbeat* hb) {
  uint8_t has_event = 0;
  if (!r.svarint(&hb->last_marked_step) || !r.svarint(&hb->mark_age_ms) || !r.u8(&has_event)) {
    return "cut short";
  }
  if (hb->last_marked_step < -1 || hb->last_marked_step > kMaxStep) return "step out of range";
  if (hb->mark_age_ms < -1 || hb->mark_age_ms > kMaxAgeMs) return "mark age out of range";
  if (has_event > 1) return "bad event flag";
  hb->has_event = has_event == 1;
  if (hb->has_event) {
    if (!r.varint_as(&hb->kind) || !r.varint_as(&hb->coll) || !r.svarint32(&hb->microbatch) ||
        !r.svarint(&hb->event_step) || !r.svarint(&hb->event_age_ms) || !r.str(&hb->name)) {
      return "cut short";
    }
    if (op_kind_info(hb->kind) == nullptr) return "unknown op kind";
    if (hb->coll > SP_COLL_SCATTER) return "unknown collective type";
    if (hb->microbatch < -1) return "micro-batch out of range";
    if (hb->event_step < -1 || hb->event_step > kMaxStep) return "event step out of range";
    if (hb->event_age_ms < 0 || hb->event_age_ms > kMaxAgeMs) return "event age out of range";
    if (hb->name.size() > kMaxHeartbeatName || !printable(hb->name)) {
      hb->name.clear();  // never kept, never echoed
      return "op name too long or not printable";
    }
  }
  if (!r.varint(&hb->events_in_step)) return "cut short";
  if (hb->events_in_step > kMaxEventsInStep) return "event count out of range";
  return "";
}

std::string parse_one(std::string_view body, int world_size, HostBeats* b) {
  if (body.substr(0, 4) != std::string_view(kMagic, 4)) return "bad magic";
  Reader r(body.substr(4), 4);
  uint8_t version = 0;
  int32_t leader = -1;
  uint64_t n = 0;
  if (!r.u8(&version) || version != kVersion) return "unsupported version";
  if (!r.svarint32(&leader) || !r.varint(&b->round) || !r.varint(&n)) return "cut short";
  if (leader < 0 || leader >= world_size) return "leader rank outside the world";
  if (n > kMaxHostBeats || n > r.remaining()) return "rank count out of range";
  b->leader = leader;
  b->ranks.resize(static_cast<size_t>(n));
  for (RankBeat& rb : b->ranks) {
    uint8_t heard = 0;
    if (!r.svarint32(&rb.rank) || !r.u8(&heard) || !r.svarint(&rb.silent_ms)) return "cut short";
    if (rb.rank < 0 || rb.rank >= world_size) return "rank outside the world";
    if (heard > 1 || rb.silent_ms < 0 || rb.silent_ms > kMaxAgeMs) return "bad silence";
    rb.heard = heard == 1;
    if (std::string why = get_heartbeat(r, &rb.hb); !why.empty()) return why;
  }
  if (r.remaining() != 0) return "unexpected bytes at the end";
  return "";
}

}  // namespace

Heartbeat aged(Heartbeat hb, int64_t ms) {
  ms = std::max<int64_t>(0, ms);
  if (hb.mark_age_ms >= 0) hb.mark_age_ms = std::min(kMaxAgeMs, hb.mark_age_ms + ms);
  if (hb.has_event) hb.event_age_ms = std::min(kMaxAgeMs, hb.event_age_ms + ms);
  return hb;
}

HeartbeatSource runtime_heartbeat_source(const RuntimeCalls& runtime) {
  return [api = runtime](Heartbeat* out) {
    if (api.get_heartbeat == nullptr || api.now_ns == nullptr) return false;
    sp_heartbeat raw{};
    raw.struct_size = sizeof raw;
    if (api.get_heartbeat(&raw) != SP_OK) return false;
    const uint64_t now = api.now_ns();
    auto age_ms = [now](uint64_t t) {
      return static_cast<int64_t>(now > t ? (now - t) / 1'000'000u : 0);
    };
    Heartbeat hb;
    hb.last_marked_step = std::clamp<int64_t>(raw.last_marked_step, -1, kMaxStep);
    hb.mark_age_ms = raw.last_mark_ns != 0 ? std::min(kMaxAgeMs, age_ms(raw.last_mark_ns)) : -1;
    hb.has_event = raw.event_end_ns != 0 && op_kind_info(raw.kind) != nullptr;
    if (hb.has_event) {
      hb.kind = raw.kind;
      hb.coll = raw.coll <= SP_COLL_SCATTER ? raw.coll : 0;
      hb.microbatch = std::max(-1, raw.microbatch);
      hb.event_step = std::clamp<int64_t>(raw.event_step, -1, kMaxStep);
      hb.event_age_ms = std::min(kMaxAgeMs, age_ms(raw.event_end_ns));
      raw.name[SP_HEARTBEAT_NAME_BYTES - 1] = '\0';
      for (const char* c = raw.name; *c != '\0' && hb.name.size() < kMaxHeartbeatName; ++c) {
        hb.name.push_back(*c >= 0x20 && *c <= 0x7e ? *c : '?');
      }
    }
    hb.events_in_step = std::min<uint64_t>(raw.events_in_step, kMaxEventsInStep);
    *out = std::move(hb);
    return true;
  };
}

std::string encode_heartbeat_frame(int rank, const Heartbeat& hb) {
  std::string out;
  Writer w(&out);
  w.u8(kVersion);
  w.svarint(rank);
  put_heartbeat(w, hb);
  return out;
}

bool decode_heartbeat_frame(std::string_view payload, int world_size, int* rank, Heartbeat* hb,
                            std::string* error) {
  Reader r(payload, 0);
  uint8_t version = 0;
  int32_t who = -1;
  if (!r.u8(&version) || version != kVersion) return *error = "unsupported version", false;
  if (!r.svarint32(&who) || who < 0 || who >= world_size) {
    return *error = "rank outside the world", false;
  }
  *error = get_heartbeat(r, hb);
  if (error->empty() && r.remaining() != 0) *error = "unexpected bytes at the end";
  *rank = who;
  return error->empty();
}

void append_host_beats(const HostBeats& beats, std::string* out) {
  const size_t at = out->size();
  out->append(4, '\0');
  Writer w(out);
  w.bytes(std::string_view(kMagic, 4));
  w.u8(kVersion);
  w.svarint(beats.leader);
  w.varint(beats.round);
  w.varint(beats.ranks.size());
  for (const RankBeat& rb : beats.ranks) {
    w.svarint(rb.rank);
    w.u8(rb.heard ? 1 : 0);
    w.svarint(rb.silent_ms);
    put_heartbeat(w, rb.hb);
  }
  const auto length = static_cast<uint32_t>(out->size() - at - 4);
  for (int i = 0; i < 4; ++i) {
    (*out)[at + static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xFFu);
  }
}

bool parse_host_beats(std::string_view bytes, int world_size, std::vector<HostBeats>* out,
                      std::string* error) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    Reader r(bytes.substr(pos), pos);
    uint32_t length = 0;
    if (!r.u32(&length) || length > r.remaining()) {
      *error = "host heartbeats at byte " + std::to_string(pos) + ": cut short";
      return false;
    }
    HostBeats b;
    const std::string why = parse_one(bytes.substr(pos + 4, length), world_size, &b);
    if (!why.empty()) {
      *error = "host heartbeats at byte " + std::to_string(pos) + ": " + why;
      return false;
    }
    out->push_back(std::move(b));
    pos += 4 + length;
  }
  return true;
}

std::string describe_op(const Heartbeat& hb) {
  if (!hb.has_event) return "none";
  std::string op;
  if (!hb.name.empty()) {
    op = hb.name;
  } else if (hb.kind == SP_OP_COLLECTIVE) {
    op = std::string(collective_name(hb.coll));
  } else {
    op = std::string(op_kind_name(hb.kind, "op"));
  }
  if (hb.microbatch >= 0) op += " mb=" + std::to_string(hb.microbatch);
  return op;
}

}  // namespace sp::rank_pipeline
