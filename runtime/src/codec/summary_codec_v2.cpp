// Body of wire version 2, the compact one (v: LEB128 varint, z: zigzag varint, u64: fixed LE):
//   z rank, z world_size, z dp_rank, z pp_stage, z step, u64 step_start_ns,
//   z step_end_ns - step_start_ns, z clock_offset_ns, v dropped_events
//   v name count m, then m names (v length, bytes): names[1..m]; names[0] is always ""
//   v group count, then per group: u64 group_id, z group_size     (the communicators this step
//                                                                  used, each written once)
//   v op count, then per op:
//     u8 head: kind (bits 0-3), time_source (bits 4-5), step tag (bits 6-7: 0 no step label,
//              1 this summary's step, 2 another step: z label - (step + 1) follows the times)
//     u8 presence: bit 0 coll, 1 microbatch, 2 peer, 3 group (+ seq), 4 bytes, 5 stream, 6 name,
//              7 wide (kind or time_source too large for the head: v kind, v time_source follow
//              the step label; the head's bits 0-5 are then 0)
//     z start_ns - the previous op's start_ns (the first op: - step_start_ns), v duration,
//     [z step label delta], then the present fields in bit order: v coll, z microbatch, z peer,
//     v group index + z seq - the previous seq of that group (0 before the first), v bytes,
//     v stream, v name_id
//   v annotation key count, then the keys (v length, bytes)
//   v annotation count, then per annotation: z microbatch, v key index, v value length, value
// Version 3: the same, then v step_cpu_ns.
// Why: a step of a rank is tens of ops whose times are close together and whose group ids,
// names and keys repeat; version 1 spent 80 bytes on each op (see rank_pipeline/README.md for
// the bytes per rank and step).
#include <fmt/format.h>

#include <map>
#include <utility>
#include <vector>

#include "summary_codec_body.h"
#include "straggler_probe/wire_io.h"

namespace sp::runtime::codec {
namespace {

enum Presence : uint8_t {
  kColl = 1u << 0,
  kMicrobatch = 1u << 1,
  kPeer = 1u << 2,
  kGroup = 1u << 3,
  kBytes = 1u << 4,
  kStream = 1u << 5,
  kName = 1u << 6,
  kWide = 1u << 7,
};
enum StepTag : uint8_t { kNoLabel = 0, kThisStep = 1, kOtherStep = 2 };

constexpr size_t kMinOpBytes = 4;     // head, presence, start delta, duration
constexpr size_t kMinGroupBytes = 9;  // id, size
constexpr size_t kMinAnnotationBytes = 3;

using GroupKey = std::pair<uint64_t, int32_t>;  // (group_id, group_size)

bool has_group(const OpRecord& op) { return op.group_id != 0 || op.group_size != 0 || op.seq != 0; }

uint8_t presence_of(const OpRecord& op, uint32_t name_id) {
  uint8_t p = 0;
  if (op.coll != 0) p |= kColl;
  if (op.microbatch != -1) p |= kMicrobatch;
  if (op.peer != -1) p |= kPeer;
  if (has_group(op)) p |= kGroup;
  if (op.bytes != 0) p |= kBytes;
  if (op.stream != 0) p |= kStream;
  if (name_id != 0) p |= kName;
  if (op.kind > 0x0Fu || op.time_source > 0x3u) p |= kWide;
  return p;
}

class BodyEncoder {
 public:
  BodyEncoder(const StepSummary& s, uint32_t name_shift, bool v3, std::string* out)
      : s_(s), shift_(name_shift), v3_(v3), w_(out) {}

  void run() {
    w_.svarint(s_.rank);
    w_.svarint(s_.world_size);
    w_.svarint(s_.dp_rank);
    w_.svarint(s_.pp_stage);
    w_.svarint(s_.step);
    w_.u64(s_.step_start_ns);
    w_.svarint(static_cast<int64_t>(s_.step_end_ns - s_.step_start_ns));
    w_.svarint(s_.clock_offset_ns);
    w_.varint(s_.dropped_events);
    const size_t skip = shift_ == 0 ? 1 : 0;  // names[0] == "" is implied, not written
    w_.varint(s_.names.size() - skip);
    for (size_t i = skip; i < s_.names.size(); ++i) w_.str(s_.names[i]);
    groups();
    w_.varint(s_.ops.size());
    uint64_t prev_start = s_.step_start_ns;
    for (const OpRecord& op : s_.ops) {
      write_op(op, prev_start);
      prev_start = op.start_ns;
    }
    annotations();
    if (v3_) w_.varint(s_.step_cpu_ns);
  }

 private:
  void groups() {
    std::vector<const OpRecord*> firsts;
    for (const OpRecord& op : s_.ops) {
      if (!has_group(op)) continue;
      if (group_index_.emplace(GroupKey{op.group_id, op.group_size}, firsts.size()).second) {
        firsts.push_back(&op);
      }
    }
    w_.varint(firsts.size());
    for (const OpRecord* op : firsts) {
      w_.u64(op->group_id);
      w_.svarint(op->group_size);
    }
    last_seq_.assign(firsts.size(), 0);
  }

  void write_op(const OpRecord& op, uint64_t prev_start) {
    const uint32_t name_id = (shift_ != 0 && op.name_id != 0) ? op.name_id + shift_ : op.name_id;
    const uint64_t this_label = static_cast<uint64_t>(s_.step) + 1;
    const StepTag tag = op.step_plus_one == 0            ? kNoLabel
                        : op.step_plus_one == this_label ? kThisStep
                                                         : kOtherStep;
    const uint8_t presence = presence_of(op, name_id);
    const uint32_t head_bits = (presence & kWide) ? 0 : op.kind | (op.time_source << 4);
    w_.u8(static_cast<uint8_t>(head_bits | (tag << 6)));
    w_.u8(presence);
    w_.svarint(static_cast<int64_t>(op.start_ns - prev_start));
    w_.varint(op.end_ns - op.start_ns);
    if (tag == kOtherStep) w_.svarint(static_cast<int64_t>(op.step_plus_one - this_label));
    if (presence & kWide) {
      w_.varint(op.kind);
      w_.varint(op.time_source);
    }
    if (presence & kColl) w_.varint(op.coll);
    if (presence & kMicrobatch) w_.svarint(op.microbatch);
    if (presence & kPeer) w_.svarint(op.peer);
    if (presence & kGroup) {
      const size_t g = group_index_.at(GroupKey{op.group_id, op.group_size});
      w_.varint(g);
      w_.svarint(static_cast<int64_t>(op.seq - last_seq_[g]));
      last_seq_[g] = op.seq;
    }
    if (presence & kBytes) w_.varint(op.bytes);
    if (presence & kStream) w_.varint(op.stream);
    if (presence & kName) w_.varint(name_id);
  }

  void annotations() {
    std::map<std::string, size_t> key_index;
    std::vector<const std::string*> keys;
    for (const Annotation& a : s_.annotations) {
      if (key_index.emplace(a.key, keys.size()).second) keys.push_back(&a.key);
    }
    w_.varint(keys.size());
    for (const std::string* k : keys) w_.str(*k);
    w_.varint(s_.annotations.size());
    for (const Annotation& a : s_.annotations) {
      w_.svarint(a.microbatch);
      w_.varint(key_index.at(a.key));
      w_.str(a.value);
    }
  }

  const StepSummary& s_;
  uint32_t shift_;
  bool v3_;
  wire::Writer w_;
  std::map<GroupKey, size_t> group_index_;
  std::vector<uint64_t> last_seq_;
};

class BodyDecoder {
 public:
  BodyDecoder(std::string_view body, size_t base, bool v3, StepSummary* s)
      : r_(body, base), v3_(v3), s_(*s) {}

  std::string run() {
    int64_t end_delta = 0;
    if (!(r_.svarint32(&s_.rank) && r_.svarint32(&s_.world_size) && r_.svarint32(&s_.dp_rank) &&
          r_.svarint32(&s_.pp_stage) && r_.svarint(&s_.step) && r_.u64(&s_.step_start_ns) &&
          r_.svarint(&end_delta) && r_.svarint(&s_.clock_offset_ns) &&
          r_.varint(&s_.dropped_events))) {
      return fmt::format("truncated or out-of-range fixed fields at byte {}", r_.offset());
    }
    s_.step_end_ns = s_.step_start_ns + static_cast<uint64_t>(end_delta);
    if (std::string e = names(); !e.empty()) return e;
    if (std::string e = groups(); !e.empty()) return e;
    if (std::string e = ops(); !e.empty()) return e;
    if (std::string e = annotations(); !e.empty()) return e;
    if (v3_ && !r_.varint(&s_.step_cpu_ns)) {
      return fmt::format("truncated step CPU time at byte {}", r_.offset());
    }
    if (r_.remaining() != 0) {
      return fmt::format("{} unexpected bytes after the {}", r_.remaining(),
                         v3_ ? "step CPU time" : "annotations");
    }
    return "";
  }

 private:
  // A count of items of at least `min_bytes` each: never more than the bytes left could hold.
  bool count(uint64_t* n, size_t min_bytes) {
    return r_.varint(n) && *n <= r_.remaining() / min_bytes;
  }

  std::string names() {
    uint64_t n = 0;
    if (!count(&n, 1)) return fmt::format("bad name count at byte {}", r_.offset());
    s_.names.assign(static_cast<size_t>(n) + 1, std::string());
    for (uint64_t i = 1; i <= n; ++i) {
      if (!r_.str(&s_.names[i])) {
        return fmt::format("truncated at byte {} reading name {} of {}", r_.offset(), i, n);
      }
    }
    return "";
  }

  std::string groups() {
    uint64_t n = 0;
    if (!count(&n, kMinGroupBytes)) return fmt::format("bad group count at byte {}", r_.offset());
    groups_.resize(static_cast<size_t>(n));
    for (GroupKey& g : groups_) {
      if (!(r_.u64(&g.first) && r_.svarint32(&g.second))) {
        return fmt::format("truncated or out-of-range group at byte {}", r_.offset());
      }
    }
    last_seq_.assign(groups_.size(), 0);
    return "";
  }

  std::string ops() {
    uint64_t n = 0;
    if (!count(&n, kMinOpBytes)) return fmt::format("bad op count at byte {}", r_.offset());
    s_.ops.resize(static_cast<size_t>(n));
    uint64_t prev_start = s_.step_start_ns;
    for (uint64_t i = 0; i < n; ++i) {
      OpRecord& op = s_.ops[i];
      op = OpRecord{};
      op.microbatch = -1;
      op.peer = -1;
      if (std::string e = read_op(&op, prev_start); !e.empty()) {
        return fmt::format("op {} of {} at byte {}: {}", i, n, r_.offset(), e);
      }
      prev_start = op.start_ns;
    }
    return "";
  }

  std::string read_op(OpRecord* op, uint64_t prev_start) {
    uint8_t head = 0, presence = 0;
    int64_t start_delta = 0;
    uint64_t duration = 0;
    if (!(r_.u8(&head) && r_.u8(&presence) && r_.svarint(&start_delta) && r_.varint(&duration))) {
      return "truncated";
    }
    op->kind = head & 0x0Fu;
    op->time_source = (head >> 4) & 0x3u;
    op->start_ns = prev_start + static_cast<uint64_t>(start_delta);
    op->end_ns = op->start_ns + duration;
    if (op->end_ns < op->start_ns) return "its duration overflows";
    const uint64_t this_label = static_cast<uint64_t>(s_.step) + 1;
    switch (head >> 6) {
      case kNoLabel: break;
      case kThisStep: op->step_plus_one = this_label; break;
      case kOtherStep: {
        int64_t d = 0;
        if (!r_.svarint(&d)) return "truncated step label";
        op->step_plus_one = this_label + static_cast<uint64_t>(d);
        break;
      }
      default: return "unknown step tag 3";
    }
    bool ok = true;
    if (presence & kWide) {
      if ((head & 0x3Fu) != 0) return "a wide op with kind bits in its head";
      ok = r_.varint_as(&op->kind) && r_.varint_as(&op->time_source);
    }
    if (presence & kColl) ok = ok && r_.varint_as(&op->coll);
    if (presence & kMicrobatch) ok = ok && r_.svarint32(&op->microbatch);
    if (presence & kPeer) ok = ok && r_.svarint32(&op->peer);
    if (presence & kGroup) {
      uint64_t g = 0;
      int64_t seq_delta = 0;
      if (!(r_.varint(&g) && r_.svarint(&seq_delta))) return "truncated group reference";
      if (g >= groups_.size()) {
        return fmt::format("names group {} of a {}-entry table", g, groups_.size());
      }
      op->group_id = groups_[g].first;
      op->group_size = groups_[g].second;
      op->seq = last_seq_[g] + static_cast<uint64_t>(seq_delta);
      last_seq_[g] = op->seq;
    }
    if (presence & kBytes) ok = ok && r_.varint(&op->bytes);
    if (presence & kStream) ok = ok && r_.varint_as(&op->stream);
    if (presence & kName) ok = ok && r_.varint_as(&op->name_id);
    return ok ? "" : "truncated or out-of-range field";
  }

  std::string annotations() {
    uint64_t n = 0;
    if (!count(&n, 1)) return fmt::format("bad annotation key count at byte {}", r_.offset());
    std::vector<std::string> keys(static_cast<size_t>(n));
    for (std::string& k : keys) {
      if (!r_.str(&k)) return fmt::format("truncated annotation key at byte {}", r_.offset());
    }
    if (!count(&n, kMinAnnotationBytes)) {
      return fmt::format("bad annotation count at byte {}", r_.offset());
    }
    s_.annotations.resize(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) {
      Annotation& a = s_.annotations[i];
      uint64_t key = 0;
      if (!(r_.svarint32(&a.microbatch) && r_.varint(&key) && r_.str(&a.value))) {
        return fmt::format("truncated at byte {} reading annotation {} of {}", r_.offset(), i, n);
      }
      if (key >= keys.size()) {
        return fmt::format("annotation {} names key {} of a {}-entry table", i, key, keys.size());
      }
      a.key = keys[key];
    }
    return "";
  }

  wire::Reader r_;
  bool v3_;
  StepSummary& s_;
  std::vector<GroupKey> groups_;
  std::vector<uint64_t> last_seq_;
};

}  // namespace

void encode_body_v3(const StepSummary& s, uint32_t name_shift, std::string* body) {
  BodyEncoder(s, name_shift, true, body).run();
}

std::string decode_body_v2(std::string_view body, size_t base, StepSummary* out) {
  return BodyDecoder(body, base, false, out).run();
}

std::string decode_body_v3(std::string_view body, size_t base, StepSummary* out) {
  return BodyDecoder(body, base, true, out).run();
}

}  // namespace sp::runtime::codec
