// Wire format of a step summary (all integers little-endian):
//   header, 16 bytes: magic "SPSM", u16 version (1), u16 flags (0), u32 body size,
//                     u32 CRC-32 of the body
//   body: i32 rank, i32 world_size, i32 dp_rank, i32 pp_stage, i64 step, u64 step_start_ns,
//         u64 step_end_ns, i64 clock_offset_ns, u64 dropped_events,
//         u32 name count, then per name: u32 length, bytes          (names[0] is "")
//         u32 op count, then per op the 80 bytes of sp_event, field by field in declaration order
//         u32 annotation count, then per annotation: i32 microbatch, u32 key length, key,
//                                                    u32 value length, value
// The decoder checks every length against the bytes left before it allocates, so a truncated or
// hostile payload costs at most its own size.
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "crc32.h"
#include "straggler_probe/step_summary.h"

namespace sp::runtime {
namespace {

constexpr char kMagic[4] = {'S', 'P', 'S', 'M'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 16;
constexpr size_t kOpWireSize = 80;
constexpr size_t kFixedBodySize = 4 * 4 + 8 * 5;

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i32(int32_t v) { put(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }

 private:
  void put(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
  }
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes, size_t base) : bytes_(bytes), base_(base) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t offset() const { return base_ + pos_; }
  bool u32(uint32_t* v) { return get(v, 4); }
  bool u64(uint64_t* v) { return get(v, 8); }
  bool i32(int32_t* v) {
    uint32_t u = 0;
    if (!get(&u, 4)) return false;
    *v = static_cast<int32_t>(u);
    return true;
  }
  bool i64(int64_t* v) {
    uint64_t u = 0;
    if (!get(&u, 8)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > remaining()) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }

 private:
  template <class U>
  bool get(U* v, int bytes) {
    if (remaining() < static_cast<size_t>(bytes)) return false;
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) {
      x |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + static_cast<size_t>(i)]))
           << (8 * i);
    }
    *v = static_cast<U>(x);
    pos_ += static_cast<size_t>(bytes);
    return true;
  }
  std::string_view bytes_;
  size_t base_;
  size_t pos_ = 0;
};

void write_op(Writer& w, const OpRecord& op) {
  w.u64(op.start_ns);
  w.u64(op.end_ns);
  w.u64(op.group_id);
  w.u64(op.seq);
  w.u64(op.bytes);
  w.u32(op.kind);
  w.u32(op.coll);
  w.i32(op.microbatch);
  w.i32(op.peer);
  w.i32(op.group_size);
  w.u32(op.stream);
  w.u32(op.name_id);
  w.u32(op.time_source);
  w.u64(op.step_plus_one);
}

bool read_op(Reader& r, OpRecord* op) {
  return r.u64(&op->start_ns) && r.u64(&op->end_ns) && r.u64(&op->group_id) && r.u64(&op->seq) &&
         r.u64(&op->bytes) && r.u32(&op->kind) && r.u32(&op->coll) && r.i32(&op->microbatch) &&
         r.i32(&op->peer) && r.i32(&op->group_size) && r.u32(&op->stream) &&
         r.u32(&op->name_id) && r.u32(&op->time_source) && r.u64(&op->step_plus_one);
}

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = "step summary: " + std::move(message);
  return false;
}

}  // namespace

std::string encode_summary(const StepSummary& s) {
  std::string body;
  body.reserve(kFixedBodySize + 12 + s.ops.size() * kOpWireSize + s.names.size() * 16 +
               s.annotations.size() * 32);
  Writer w(&body);
  w.i32(s.rank);
  w.i32(s.world_size);
  w.i32(s.dp_rank);
  w.i32(s.pp_stage);
  w.i64(s.step);
  w.u64(s.step_start_ns);
  w.u64(s.step_end_ns);
  w.i64(s.clock_offset_ns);
  w.u64(s.dropped_events);
  // The name table always starts with "" so that name_id 0 means "no name" on both sides.
  const bool has_empty_first = !s.names.empty() && s.names.front().empty();
  const uint32_t shift = has_empty_first ? 0 : 1;
  w.u32(static_cast<uint32_t>(s.names.size() + shift));
  if (shift != 0) w.str("");
  for (const std::string& n : s.names) w.str(n);
  w.u32(static_cast<uint32_t>(s.ops.size()));
  for (OpRecord op : s.ops) {
    if (shift != 0 && op.name_id != 0) op.name_id += shift;
    write_op(w, op);
  }
  w.u32(static_cast<uint32_t>(s.annotations.size()));
  for (const Annotation& a : s.annotations) {
    w.i32(a.microbatch);
    w.str(a.key);
    w.str(a.value);
  }

  std::string out;
  out.reserve(kHeaderSize + body.size());
  out.append(kMagic, sizeof(kMagic));
  Writer h(&out);
  h.u16(kVersion);
  h.u16(0);
  h.u32(static_cast<uint32_t>(body.size()));
  h.u32(crc32(body.data(), body.size()));
  out += body;
  return out;
}

bool decode_summary(std::string_view bytes, StepSummary* out, std::string* error) {
  try {
    if (out == nullptr) return fail(error, "no output object");
    if (bytes.size() < kHeaderSize) {
      return fail(error, fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(),
                                     kHeaderSize));
    }
    if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
      return fail(error, "bad magic (not a straggler_probe step summary)");
    }
    Reader h(bytes.substr(4, kHeaderSize - 4), 4);
    uint32_t version_flags = 0, body_size = 0, crc = 0;
    h.u32(&version_flags);
    h.u32(&body_size);
    h.u32(&crc);
    const uint32_t version = version_flags & 0xFFFFu;
    if (version != kVersion) {
      return fail(error, fmt::format("version {} is not supported (this build reads {})", version,
                                     kVersion));
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
    const std::string_view body = bytes.substr(kHeaderSize);
    if (crc32(body.data(), body.size()) != crc) return fail(error, "checksum mismatch (corrupted)");

    StepSummary s;
    Reader r(body, kHeaderSize);
    if (!(r.i32(&s.rank) && r.i32(&s.world_size) && r.i32(&s.dp_rank) && r.i32(&s.pp_stage) &&
          r.i64(&s.step) && r.u64(&s.step_start_ns) && r.u64(&s.step_end_ns) &&
          r.i64(&s.clock_offset_ns) && r.u64(&s.dropped_events))) {
      return fail(error, fmt::format("truncated fixed fields at byte {}", r.offset()));
    }
    uint32_t n = 0;
    if (!r.u32(&n) || static_cast<uint64_t>(n) * 4 > r.remaining()) {
      return fail(error, fmt::format("bad name count at byte {}", r.offset()));
    }
    if (n == 0) return fail(error, "empty name table (names[0] must be \"\")");
    s.names.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (!r.str(&s.names[i])) {
        return fail(error, fmt::format("truncated at byte {} reading name {} of {}", r.offset(), i, n));
      }
    }
    if (!s.names[0].empty()) return fail(error, "names[0] is not empty");
    if (!r.u32(&n) || static_cast<uint64_t>(n) * kOpWireSize > r.remaining()) {
      return fail(error, fmt::format("bad op count at byte {}", r.offset()));
    }
    s.ops.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      OpRecord& op = s.ops[i];
      read_op(r, &op);  // length checked above
      if (op.kind == 0 || op.kind >= SP_OP_KIND_MAX) {
        return fail(error, fmt::format("op {} has unknown kind {}", i, op.kind));
      }
      if (op.end_ns < op.start_ns) return fail(error, fmt::format("op {} ends before it starts", i));
      if (op.name_id >= s.names.size()) {
        return fail(error, fmt::format("op {} names entry {} of a {}-entry table", i, op.name_id,
                                       s.names.size()));
      }
    }
    if (!r.u32(&n) || static_cast<uint64_t>(n) * 12 > r.remaining()) {
      return fail(error, fmt::format("bad annotation count at byte {}", r.offset()));
    }
    s.annotations.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      Annotation& a = s.annotations[i];
      if (!(r.i32(&a.microbatch) && r.str(&a.key) && r.str(&a.value))) {
        return fail(error, fmt::format("truncated at byte {} reading annotation {} of {}",
                                       r.offset(), i, n));
      }
    }
    if (r.remaining() != 0) {
      return fail(error, fmt::format("{} unexpected bytes after the annotations", r.remaining()));
    }
    *out = std::move(s);
    return true;
  } catch (const std::exception& e) {  // allocation failure: never let it cross into callers
    return fail(error, fmt::format("cannot decode: {}", e.what()));
  }
}

}  // namespace sp::runtime
