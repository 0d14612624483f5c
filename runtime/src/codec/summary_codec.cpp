// Framing of a step summary (all integers little-endian):
//   header, 16 bytes: magic "SPSM", u16 version, u16 flags (0), u32 body size,
//                     u32 CRC-32 of the body
//   body: version 3 (summary_codec_v2.cpp: version 2's body and the step's CPU time) is
//         written; versions 1 (summary_codec_v1.cpp), 2 and 3 are read, so that per-rank .spsum
//         files written before stay readable (their step CPU time unknown, 0).
// The decoders check every length against the bytes left before they allocate, so a truncated
// or hostile payload costs at most its own size; the checks every op must pass (kind, times,
// name id) are made here, once for every version.
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "crc32.h"
#include "straggler_probe/step_summary.h"
#include "summary_codec_body.h"
#include "straggler_probe/wire_io.h"

namespace sp::runtime {
namespace {

constexpr char kMagic[4] = {'S', 'P', 'S', 'M'};
constexpr uint16_t kWriteVersion = 3;
constexpr size_t kHeaderSize = 16;

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = "step summary: " + std::move(message);
  return false;
}

std::string check_ops(const StepSummary& s) {
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const OpRecord& op = s.ops[i];
    if (op.kind == 0 || op.kind >= SP_OP_KIND_MAX) {
      return fmt::format("op {} has unknown kind {}", i, op.kind);
    }
    if (op.end_ns < op.start_ns) return fmt::format("op {} ends before it starts", i);
    if (op.name_id >= s.names.size()) {
      return fmt::format("op {} names entry {} of a {}-entry table", i, op.name_id, s.names.size());
    }
  }
  return "";
}

// The header's checks; on success *version and *body are set.
bool read_header(std::string_view bytes, uint32_t* version, std::string_view* body,
                 std::string* error) {
  if (bytes.size() < kHeaderSize) {
    return fail(error, fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(),
                                   kHeaderSize));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return fail(error, "bad magic (not a straggler_probe step summary)");
  }
  wire::Reader h(bytes.substr(4, kHeaderSize - 4), 4);
  uint32_t version_flags = 0, body_size = 0, crc = 0;
  h.u32(&version_flags);
  h.u32(&body_size);
  h.u32(&crc);
  *version = version_flags & 0xFFFFu;
  if (*version < 1 || *version > 3) {
    return fail(error, fmt::format("version {} is not supported (this build reads 1 to 3)",
                                   *version));
  }
  if (const uint32_t flags = version_flags >> 16; flags != 0) {
    return fail(error, fmt::format("flags 0x{:x} are not supported (this build knows none)", flags));
  }
  const size_t have = bytes.size() - kHeaderSize;
  if (have < body_size) {
    return fail(error, fmt::format("truncated: header announces {} body bytes, {} present",
                                   body_size, have));
  }
  if (have > body_size) {
    return fail(error, fmt::format("{} unexpected bytes after the body", have - body_size));
  }
  *body = bytes.substr(kHeaderSize);
  if (crc32(body->data(), body->size()) != crc) return fail(error, "checksum mismatch (corrupted)");
  return true;
}

}  // namespace

std::string encode_summary(const StepSummary& s) {
  std::string out(kHeaderSize, '\0');
  out.reserve(kHeaderSize + 64 + s.ops.size() * 16 + s.names.size() * 16 +
              s.annotations.size() * 24);
  // The name table always starts with "" so that name_id 0 means "no name" on both sides.
  const bool has_empty_first = !s.names.empty() && s.names.front().empty();
  codec::encode_body_v3(s, has_empty_first ? 0 : 1, &out);
  const size_t body_size = out.size() - kHeaderSize;
  std::string header;
  wire::Writer h(&header);
  h.bytes(std::string_view(kMagic, sizeof(kMagic)));
  h.u16(kWriteVersion);
  h.u16(0);
  h.u32(static_cast<uint32_t>(body_size));
  h.u32(crc32(out.data() + kHeaderSize, body_size));
  out.replace(0, kHeaderSize, header);
  return out;
}

bool decode_summary(std::string_view bytes, StepSummary* out, std::string* error) {
  try {
    if (out == nullptr) return fail(error, "no output object");
    uint32_t version = 0;
    std::string_view body;
    if (!read_header(bytes, &version, &body, error)) return false;
    StepSummary s;
    std::string why = version == 1   ? codec::decode_body_v1(body, kHeaderSize, &s)
                      : version == 2 ? codec::decode_body_v2(body, kHeaderSize, &s)
                                     : codec::decode_body_v3(body, kHeaderSize, &s);
    if (why.empty()) why = check_ops(s);
    if (!why.empty()) return fail(error, std::move(why));
    *out = std::move(s);
    return true;
  } catch (const std::exception& e) {  // allocation failure: never let it cross into callers
    return fail(error, fmt::format("cannot decode: {}", e.what()));
  }
}

}  // namespace sp::runtime
