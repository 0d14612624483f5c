#include "summary_seeds.h"

#include <gtest/gtest.h>

#include "codec/crc32.h"
#include "straggler_probe/wire_io.h"
#include "synthetic_job.h"

namespace sp::fuzz {
namespace {

using runtime::StepSummary;

sp_event op(uint32_t kind, uint64_t start, uint64_t duration) {
  sp_event e{};
  e.start_ns = start;
  e.end_ns = start + duration;
  e.kind = kind;
  e.microbatch = -1;
  e.peer = -1;
  return e;
}

// Every field of an op set, and a few extreme ones: what the compact encoding has to get right.
StepSummary edge_summary() {
  StepSummary s;
  s.rank = 3;
  s.world_size = 8;
  s.dp_rank = 1;
  s.pp_stage = 2;
  s.step = -7;
  s.step_start_ns = 1'700'000'000'000'000'000ull;
  s.step_end_ns = s.step_start_ns + 123'456'789;
  s.clock_offset_ns = -12345;
  s.dropped_events = 17;
  s.names = {"", "forward", "all_reduce:dp", std::string("bin\0\xff", 5)};
  for (uint32_t i = 0; i < 6; ++i) {
    sp_event e = op(i % 2 == 0 ? static_cast<uint32_t>(SP_OP_FORWARD) : static_cast<uint32_t>(SP_OP_COLLECTIVE),
                    s.step_start_ns + i * 1000, 500 + i);
    e.group_id = 0xDEADBEEFCAFEF00Dull;
    e.seq = 40 + i;
    e.bytes = 1ull << 33;
    e.coll = i % 2 == 0 ? static_cast<uint32_t>(SP_COLL_NONE) : static_cast<uint32_t>(SP_COLL_ALL_REDUCE);
    e.microbatch = static_cast<int32_t>(i) - 1;
    e.group_size = 8;
    e.stream = 7;
    e.name_id = i % 4;
    e.time_source = i == 5 ? 77u : static_cast<uint32_t>(SP_TIME_CUDA_EVENT);  // 77: wide
    e.step_plus_one = i == 4 ? 0 : static_cast<uint64_t>(-6 + static_cast<int>(i));
    s.ops.push_back(e);
  }
  s.annotations = {{0, "seq_lens", "512,1024,77"}, {-1, "note", std::string("a\0b", 3)},
                   {1, "seq_lens", "[3, 4]"}};
  return s;
}

// A pipeline rank with a p2p op, the smallest summary, and one with no name table at all.
std::vector<StepSummary> small_summaries() {
  std::vector<StepSummary> out;
  StepSummary p2p;
  p2p.rank = 1;
  p2p.world_size = 2;
  p2p.pp_stage = 1;
  p2p.step = 5;
  p2p.step_start_ns = 1000;
  p2p.step_end_ns = 9000;
  p2p.names = {""};
  sp_event recv = op(SP_OP_RECV, 1100, 200);
  recv.peer = 0;
  recv.coll = SP_COLL_RECV;
  recv.microbatch = 0;
  recv.step_plus_one = 6;
  p2p.ops = {recv, op(SP_OP_FORWARD, 1400, 3000), op(SP_OP_OPTIMIZER, 8000, 900)};
  out.push_back(p2p);
  StepSummary empty;
  empty.names = {""};
  out.push_back(empty);
  StepSummary no_names;  // the encoder adds the leading ""
  no_names.ops = {op(SP_OP_GC, 10, 0)};
  out.push_back(no_names);
  return out;
}

}  // namespace

std::vector<StepSummary> seed_summaries() {
  std::vector<StepSummary> out = small_summaries();
  out.push_back(edge_summary());
  online::testing::SyntheticJob ddp;  // 4 dp ranks, bucket all-reduces
  online::testing::SyntheticJob pipe;
  pipe.dp = 2;
  pipe.pp = 2;
  pipe.microbatches = 2;
  pipe.seq_lens = true;
  for (const auto* job : {&ddp, &pipe}) {
    const auto run = online::testing::run_synthetic(*job, 2);
    for (const auto& step : run.steps) out.insert(out.end(), step.begin(), step.end());
  }
  return out;
}

std::vector<std::string> encoded_v2(const std::vector<StepSummary>& summaries) {
  std::vector<std::string> out;
  for (const StepSummary& s : summaries) out.push_back(runtime::encode_summary(s));
  return out;
}

namespace {
void write_v1_op(runtime::wire::Writer& w, const sp_event& e, uint32_t name_id) {
  w.u64(e.start_ns);
  w.u64(e.end_ns);
  w.u64(e.group_id);
  w.u64(e.seq);
  w.u64(e.bytes);
  w.u32(e.kind);
  w.u32(e.coll);
  w.i32(e.microbatch);
  w.i32(e.peer);
  w.i32(e.group_size);
  w.u32(e.stream);
  w.u32(name_id);
  w.u32(e.time_source);
  w.u64(e.step_plus_one);
}
}  // namespace

// Version 1 as its encoder wrote it (runtime/src/codec/summary_codec_v1.cpp has the layout).
std::vector<std::string> encoded_v1(const std::vector<StepSummary>& summaries) {
  std::vector<std::string> out;
  for (const StepSummary& s : summaries) {
    std::string payload = "SPSM";
    runtime::wire::Writer w(&payload);
    w.u16(1);
    w.u16(0);
    w.u32(0);  // body size and CRC: fixed below
    w.u32(0);
    w.i32(s.rank);
    w.i32(s.world_size);
    w.i32(s.dp_rank);
    w.i32(s.pp_stage);
    w.i64(s.step);
    w.u64(s.step_start_ns);
    w.u64(s.step_end_ns);
    w.i64(s.clock_offset_ns);
    w.u64(s.dropped_events);
    const uint32_t shift = !s.names.empty() && s.names[0].empty() ? 0 : 1;
    w.u32(static_cast<uint32_t>(s.names.size() + shift));
    if (shift != 0) w.str32("");
    for (const std::string& n : s.names) w.str32(n);
    w.u32(static_cast<uint32_t>(s.ops.size()));
    for (const sp_event& e : s.ops) write_v1_op(w, e, e.name_id == 0 ? 0 : e.name_id + shift);
    w.u32(static_cast<uint32_t>(s.annotations.size()));
    for (const runtime::Annotation& a : s.annotations) {
      w.i32(a.microbatch);
      w.str32(a.key);
      w.str32(a.value);
    }
    fix_summary_checksum(&payload);
    out.push_back(std::move(payload));
  }
  return out;
}

std::vector<std::string> summary_dictionary() {
  return {"SPSM", std::string("SPSM\x01\x00\x00\x00", 8), std::string("SPSM\x02\x00\x00\x00", 8),
          std::string("\x00\x00\x00\x00", 4), std::string("\xff\xff\xff\xff", 4),
          std::string("\x0c", 1), std::string("\x0b\x7f", 2)};
}

void fix_summary_checksum(std::string* p) {
  if (p->size() < 16) return;
  const size_t body = p->size() - 16;
  const uint32_t crc = runtime::crc32(p->data() + 16, body);
  for (size_t i = 0; i < 4; ++i) {
    (*p)[8 + i] = static_cast<char>((body >> (8 * i)) & 0xFF);
    (*p)[12 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  }
}

bool same_summary(const StepSummary& a, const StepSummary& b, std::string* why) {
  const auto differ = [why](const char* what) { return *why = what, false; };
  if (a.rank != b.rank || a.world_size != b.world_size || a.dp_rank != b.dp_rank ||
      a.pp_stage != b.pp_stage || a.step != b.step) {
    return differ("layout or step");
  }
  if (a.step_start_ns != b.step_start_ns || a.step_end_ns != b.step_end_ns ||
      a.clock_offset_ns != b.clock_offset_ns || a.dropped_events != b.dropped_events) {
    return differ("times or counters");
  }
  if (a.names != b.names) return differ("names");
  if (a.ops.size() != b.ops.size()) return differ("op count");
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const sp_event &x = a.ops[i], &y = b.ops[i];
    if (x.start_ns != y.start_ns || x.end_ns != y.end_ns || x.group_id != y.group_id ||
        x.seq != y.seq || x.bytes != y.bytes || x.kind != y.kind || x.coll != y.coll ||
        x.microbatch != y.microbatch || x.peer != y.peer || x.group_size != y.group_size ||
        x.stream != y.stream || x.name_id != y.name_id || x.time_source != y.time_source ||
        x.step_plus_one != y.step_plus_one) {
      return differ("an op");
    }
  }
  if (a.annotations.size() != b.annotations.size()) return differ("annotation count");
  for (size_t i = 0; i < a.annotations.size(); ++i) {
    const auto &x = a.annotations[i], &y = b.annotations[i];
    if (x.microbatch != y.microbatch || x.key != y.key || x.value != y.value) return differ("an annotation");
  }
  return true;
}

bool decode_and_round_trip(const std::string& bytes, StepSummary* out, std::string* error) {
  if (!runtime::decode_summary(bytes, out, error)) return false;
  const std::string again = runtime::encode_summary(*out);
  StepSummary back;
  std::string e2, why;
  EXPECT_TRUE(runtime::decode_summary(again, &back, &e2)) << "re-encoded summary rejected: " << e2;
  EXPECT_TRUE(same_summary(*out, back, &why)) << "round trip changed " << why;
  EXPECT_EQ(runtime::encode_summary(back), again) << "re-encoding is not stable";
  return true;
}

}  // namespace sp::fuzz
