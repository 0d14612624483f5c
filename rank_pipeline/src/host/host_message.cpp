#include "host_message.h"

#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline {
namespace {

constexpr char kMagic[4] = {'S', 'P', 'H', 'M'};
constexpr uint8_t kVersion = 1;

// One message body (after its length); "" when whole.
std::string parse_one(std::string_view body, size_t base, HostMessage* m) {
  if (body.substr(0, 4) != std::string_view(kMagic, 4)) return "bad magic";
  runtime::wire::Reader r(body.substr(4), base + 4);
  uint8_t version = 0;
  if (!r.u8(&version) || version != kVersion) return "version " + std::to_string(version) + " is not supported";
  int32_t leader = 0;
  uint64_t n = 0;
  if (!(r.svarint(&m->step) && r.svarint32(&leader) && r.varint(&n) && n <= r.remaining())) {
    return "truncated header at byte " + std::to_string(r.offset());
  }
  m->leader = leader;
  m->summaries.resize(static_cast<size_t>(n));
  for (auto& [rank, bytes] : m->summaries) {
    if (!(r.svarint32(&rank) && r.str(&bytes))) {
      return "truncated summary at byte " + std::to_string(r.offset());
    }
  }
  if (!r.varint(&n) || n > r.remaining()) return "bad missing-rank count at byte " + std::to_string(r.offset());
  m->missing.resize(static_cast<size_t>(n));
  for (int& rank : m->missing) {
    if (!r.svarint32(&rank)) return "truncated missing rank at byte " + std::to_string(r.offset());
  }
  if (r.remaining() != 0) return std::to_string(r.remaining()) + " unexpected bytes at the end";
  return "";
}

}  // namespace

void append_host_message(const HostMessage& m, std::string* out) {
  const size_t at = out->size();
  out->append(4, '\0');
  runtime::wire::Writer w(out);
  w.bytes(std::string_view(kMagic, 4));
  w.u8(kVersion);
  w.svarint(m.step);
  w.svarint(m.leader);
  w.varint(m.summaries.size());
  for (const auto& [rank, bytes] : m.summaries) {
    w.svarint(rank);
    w.str(bytes);
  }
  w.varint(m.missing.size());
  for (int rank : m.missing) w.svarint(rank);
  const auto length = static_cast<uint32_t>(out->size() - at - 4);
  for (int i = 0; i < 4; ++i) (*out)[at + static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xFFu);
}

bool parse_host_messages(std::string_view bytes, std::vector<HostMessage>* out, std::string* error) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    runtime::wire::Reader r(bytes.substr(pos), pos);
    uint32_t length = 0;
    if (!r.u32(&length) || length > r.remaining()) {
      *error = "host message at byte " + std::to_string(pos) + ": cut short";
      return false;
    }
    HostMessage m;
    const std::string why = parse_one(bytes.substr(pos + 4, length), pos + 4, &m);
    if (!why.empty()) {
      *error = "host message at byte " + std::to_string(pos) + ": " + why;
      return false;
    }
    out->push_back(std::move(m));
    pos += 4 + length;
  }
  return true;
}

}  // namespace sp::rank_pipeline

