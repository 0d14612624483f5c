// Body of wire version 1 (all integers little-endian, fixed width):
//   i32 rank, i32 world_size, i32 dp_rank, i32 pp_stage, i64 step, u64 step_start_ns,
//   u64 step_end_ns, i64 clock_offset_ns, u64 dropped_events,
//   u32 name count, then per name: u32 length, bytes          (names[0] is "")
//   u32 op count, then per op the 80 bytes of sp_event, field by field in declaration order
//   u32 annotation count, then per annotation: i32 microbatch, u32 key length, key,
//                                              u32 value length, value
// Only read: the per-rank .spsum files written before version 2 hold it.
#include <fmt/format.h>

#include "summary_codec_body.h"
#include "straggler_probe/wire_io.h"

namespace sp::runtime::codec {
namespace {

constexpr size_t kOpWireSize = 80;

bool read_op(wire::Reader& r, OpRecord* op) {
  return r.u64(&op->start_ns) && r.u64(&op->end_ns) && r.u64(&op->group_id) && r.u64(&op->seq) &&
         r.u64(&op->bytes) && r.u32(&op->kind) && r.u32(&op->coll) && r.i32(&op->microbatch) &&
         r.i32(&op->peer) && r.i32(&op->group_size) && r.u32(&op->stream) &&
         r.u32(&op->name_id) && r.u32(&op->time_source) && r.u64(&op->step_plus_one);
}

}  // namespace

std::string decode_body_v1(std::string_view body, size_t base, StepSummary* s) {
  wire::Reader r(body, base);
  if (!(r.i32(&s->rank) && r.i32(&s->world_size) && r.i32(&s->dp_rank) && r.i32(&s->pp_stage) &&
        r.i64(&s->step) && r.u64(&s->step_start_ns) && r.u64(&s->step_end_ns) &&
        r.i64(&s->clock_offset_ns) && r.u64(&s->dropped_events))) {
    return fmt::format("truncated fixed fields at byte {}", r.offset());
  }
  uint32_t n = 0;
  if (!r.u32(&n) || static_cast<uint64_t>(n) * 4 > r.remaining()) {
    return fmt::format("bad name count at byte {}", r.offset());
  }
  if (n == 0) return "empty name table (names[0] must be \"\")";
  s->names.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!r.str32(&s->names[i])) {
      return fmt::format("truncated at byte {} reading name {} of {}", r.offset(), i, n);
    }
  }
  if (!s->names[0].empty()) return "names[0] is not empty";
  if (!r.u32(&n) || static_cast<uint64_t>(n) * kOpWireSize > r.remaining()) {
    return fmt::format("bad op count at byte {}", r.offset());
  }
  s->ops.resize(n);
  for (OpRecord& op : s->ops) read_op(r, &op);  // length checked above
  if (!r.u32(&n) || static_cast<uint64_t>(n) * 12 > r.remaining()) {
    return fmt::format("bad annotation count at byte {}", r.offset());
  }
  s->annotations.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Annotation& a = s->annotations[i];
    if (!(r.i32(&a.microbatch) && r.str32(&a.key) && r.str32(&a.value))) {
      return fmt::format("truncated at byte {} reading annotation {} of {}", r.offset(), i, n);
    }
  }
  if (r.remaining() != 0) {
    return fmt::format("{} unexpected bytes after the annotations", r.remaining());
  }
  return "";
}

}  // namespace sp::runtime::codec
