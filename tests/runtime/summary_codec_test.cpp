// The step summary wire format: exact round trips, and one clear error for every way a payload
// can be truncated, corrupted or forged; payloads of the older version 1 (persisted in .spsum
// files) still read.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <algorithm>
#include <string>

#include "codec/crc32.h"
#include "straggler_probe/step_summary.h"
#include "straggler_probe/wire_io.h"

namespace sp::runtime {
namespace {

StepSummary sample() {
  StepSummary s;
  s.rank = 3;
  s.world_size = 8;
  s.dp_rank = 1;
  s.pp_stage = 2;
  s.step = -7;  // labels are signed
  s.step_start_ns = 1'700'000'000'000'000'000ull;
  s.step_end_ns = 1'700'000'000'123'456'789ull;
  s.clock_offset_ns = -12345;
  s.dropped_events = 17;
  s.names = {"", "forward", "all_reduce:dp"};
  for (uint32_t i = 0; i < 5; ++i) {
    sp_event e{};
    e.start_ns = s.step_start_ns + i * 1000;
    e.end_ns = e.start_ns + 500 + i;
    e.group_id = 0xDEADBEEFCAFEF00Dull;
    e.seq = 40 + i;
    e.bytes = 1ull << 33;
    e.kind = i % 2 == 0 ? SP_OP_FORWARD : SP_OP_COLLECTIVE;
    e.coll = i % 2 == 0 ? SP_COLL_NONE : SP_COLL_ALL_REDUCE;
    e.microbatch = static_cast<int32_t>(i) - 1;
    e.peer = -1;
    e.group_size = 8;
    e.stream = 7;
    e.name_id = i % 3;
    e.time_source = SP_TIME_CUDA_EVENT;
    e.step_plus_one = i == 4 ? 0 : static_cast<uint64_t>(-4);  // another step's label, or none
    s.ops.push_back(e);
  }
  s.annotations = {{0, "seq_lens", "512,1024,77"}, {-1, "note", std::string("a\0b", 3)}};
  return s;
}

void expect_equal(const StepSummary& a, const StepSummary& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.dp_rank, b.dp_rank);
  EXPECT_EQ(a.pp_stage, b.pp_stage);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.step_start_ns, b.step_start_ns);
  EXPECT_EQ(a.step_end_ns, b.step_end_ns);
  EXPECT_EQ(a.clock_offset_ns, b.clock_offset_ns);
  EXPECT_EQ(a.dropped_events, b.dropped_events);
  EXPECT_EQ(a.step_cpu_ns, b.step_cpu_ns);
  EXPECT_EQ(a.names, b.names);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.ops[i], &b.ops[i], sizeof(sp_event)), 0) << "op " << i;
  }
  ASSERT_EQ(a.annotations.size(), b.annotations.size());
  for (size_t i = 0; i < a.annotations.size(); ++i) {
    EXPECT_EQ(a.annotations[i].microbatch, b.annotations[i].microbatch);
    EXPECT_EQ(a.annotations[i].key, b.annotations[i].key);
    EXPECT_EQ(a.annotations[i].value, b.annotations[i].value);
  }
}

// tests/data/summary_v1/sample.bin: sample() as the version-1 encoder wrote it (.spsum files).
std::string v1_sample() {
  std::ifstream in(SP_SUMMARY_V1_SAMPLE, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in) << SP_SUMMARY_V1_SAMPLE;
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

TEST(SummaryCodec, RoundTripIsExact) {
  const StepSummary s = sample();
  const std::string bytes = encode_summary(s);
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(bytes, &out, &error)) << error;
  expect_equal(s, out);
  EXPECT_EQ(encode_summary(out), bytes);
}

TEST(SummaryCodec, EmptySummaryRoundTrips) {
  StepSummary s;
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(encode_summary(s), &out, &error)) << error;
  EXPECT_EQ(out.names, std::vector<std::string>{""});  // the empty name is always entry 0
  EXPECT_TRUE(out.ops.empty());
}

TEST(SummaryCodec, WritesVersion3WithMagicLittleEndianHeader) {
  const std::string bytes = encode_summary(sample());
  EXPECT_EQ(bytes.substr(0, 4), "SPSM");
  EXPECT_EQ(bytes[4], 3);
  EXPECT_EQ(bytes[5], 0);
  // The body size, little-endian, then the body: rank 3 as a zigzag varint.
  const uint32_t body = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ(body, bytes.size() - 16);
  EXPECT_EQ(bytes[16], 6);
}

// A body framed as the encoder frames it: magic, version, flags 0, size, CRC-32.
std::string frame(uint16_t version, const std::string& body) {
  std::string out = "SPSM";
  wire::Writer h(&out);
  h.u16(version);
  h.u16(0);
  h.u32(static_cast<uint32_t>(body.size()));
  h.u32(crc32(body.data(), body.size()));
  return out + body;
}

// Version 3 adds the step's CPU time at the end; a version-2 body (the same, without it) still
// decodes, its CPU time unknown (0), and a version-3 body cut before it is an error.
TEST(SummaryCodec, TheStepCpuTimeRoundTripsAndVersion2StillDecodes) {
  StepSummary s = sample();
  s.step_cpu_ns = 123456789;
  const std::string v3 = encode_summary(s);
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(v3, &out, &error)) << error;
  EXPECT_EQ(out.step_cpu_ns, 123456789u);
  expect_equal(s, out);

  // Version 2: the same body less its last varint (123456789 takes 4 bytes), reframed.
  const std::string body2 = v3.substr(16, v3.size() - 16 - 4);
  ASSERT_TRUE(decode_summary(frame(2, body2), &out, &error)) << error;
  EXPECT_EQ(out.step_cpu_ns, 0u);
  EXPECT_EQ(out.ops.size(), s.ops.size());

  // A version-3 header on a body without the CPU time.
  EXPECT_FALSE(decode_summary(frame(3, body2), &out, &error));
  EXPECT_NE(error.find("truncated step CPU time"), std::string::npos) << error;
}

TEST(SummaryCodec, Version1PayloadsStillDecode) {
  const std::string v1 = v1_sample();
  ASSERT_GT(v1.size(), 16u);
  ASSERT_EQ(v1[4], 1);
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(v1, &out, &error)) << error;
  expect_equal(sample(), out);
  // and every truncation of it is still rejected with a message
  for (size_t n = 0; n < v1.size(); ++n) {
    EXPECT_FALSE(decode_summary(std::string_view(v1).substr(0, n), &out, &error)) << n;
    EXPECT_EQ(error.rfind("step summary: ", 0), 0u) << error;
  }
}

TEST(SummaryCodec, Version2IsAtLeastTwiceSmallerThanVersion1) {
  const std::string v1 = v1_sample();
  const std::string v2 = encode_summary(sample());
  // This sample's strings and 8 GiB payloads weigh more than a real step's; the bytes per rank
  // and step of real and synthetic jobs are measured in bench/scale (rank_pipeline/README.md).
  EXPECT_LT(v2.size() * 2, v1.size()) << v2.size() << " vs " << v1.size();
}

TEST(SummaryCodec, UnusualFieldsRoundTrip) {
  StepSummary s = sample();
  s.step = 41;
  s.step_end_ns = s.step_start_ns - 5;  // a mark before the previous one: kept as it is
  sp_event e{};
  e.start_ns = s.step_start_ns - 1'000'000;  // before the step start (a late GPU span)
  e.end_ns = UINT64_MAX;
  e.kind = SP_OP_KERNEL;
  e.time_source = SP_TIME_CUPTI;
  e.step_plus_one = 42;  // this step's own label
  e.microbatch = INT32_MIN;
  e.peer = INT32_MAX;
  e.group_id = 0xDEADBEEFCAFEF00Dull;  // the same group as the others, another size
  e.group_size = -3;
  e.seq = 0;  // going backwards within its group
  e.bytes = UINT64_MAX;
  e.stream = UINT32_MAX;
  e.name_id = 2;
  s.ops.push_back(e);
  e.kind = 77;  // out of the head's range: written wide (and then rejected, as in version 1)
  e.time_source = 9;
  StepSummary wide = s;
  wide.ops.push_back(e);
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(encode_summary(s), &out, &error)) << error;
  expect_equal(s, out);
  EXPECT_FALSE(decode_summary(encode_summary(wide), &out, &error));
  EXPECT_NE(error.find("unknown kind 77"), std::string::npos) << error;
  wide.ops.back().kind = SP_OP_OTHER;
  ASSERT_TRUE(decode_summary(encode_summary(wide), &out, &error)) << error;
  EXPECT_EQ(out.ops.back().time_source, 9u);
}

TEST(SummaryCodec, ChecksumIsTheStandardCrc32) {
  const std::string data = "straggler_probe";
  EXPECT_EQ(crc32(data.data(), data.size()),
            ::crc32(0L, reinterpret_cast<const Bytef*>(data.data()),
                    static_cast<uInt>(data.size())));
}

TEST(SummaryCodec, EveryTruncationIsRejectedWithAMessage) {
  const std::string bytes = encode_summary(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    StepSummary out;
    out.step = 999;
    std::string error;
    ASSERT_FALSE(decode_summary(std::string_view(bytes).substr(0, n), &out, &error)) << n;
    EXPECT_EQ(error.rfind("step summary: ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
    EXPECT_EQ(out.step, 999) << "output touched on failure";
  }
}

TEST(SummaryCodec, EveryFlippedByteIsRejected) {
  const std::string bytes = encode_summary(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    StepSummary out;
    std::string error;
    EXPECT_FALSE(decode_summary(bad, &out, &error)) << "byte " << i;
  }
}

TEST(SummaryCodec, SpecificErrorsNameTheProblem) {
  const std::string good = encode_summary(sample());
  StepSummary out;
  std::string error;

  std::string bad = good;
  bad[0] = 'X';
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;

  bad = good;
  bad[4] = 4;
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("version 4 is not supported"), std::string::npos) << error;

  bad = good + "xx";
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("2 unexpected bytes"), std::string::npos) << error;

  bad = good;
  bad[good.size() - 1] ^= 1;
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
}

// A version-2 body written by hand, framed with a valid header and checksum: what a forger (or
// a buggy peer) could send.
struct ForgedBody {
  std::string body;
  wire::Writer w() { return wire::Writer(&body); }
  ForgedBody() {
    wire::Writer h = w();
    for (int v : {3, 8, 1, 2, -7}) h.svarint(v);  // rank, world, dp, pp, step
    h.u64(1000);                                  // step start
    h.svarint(500);                               // end - start
    h.svarint(0);                                 // clock offset
    h.varint(0);                                  // dropped
  }
  std::string framed() const { return frame(2, body); }
};

std::string decode_error(const ForgedBody& f) {
  StepSummary out;
  std::string error;
  EXPECT_FALSE(decode_summary(f.framed(), &out, &error));
  return error;
}

TEST(SummaryCodec, ForgedCountsAndFieldsBehindAValidChecksumAreRejected) {
  {
    ForgedBody f;
    f.w().varint(UINT64_MAX / 2);  // a huge name count must not allocate
    EXPECT_NE(decode_error(f).find("bad name count"), std::string::npos) << decode_error(f);
  }
  auto one_op = [](uint8_t head, uint8_t presence, auto&& fields) {
    ForgedBody f;
    wire::Writer w = f.w();
    w.varint(1);  // names: "", "x"
    w.str("x");
    w.varint(1);  // one group
    w.u64(77);
    w.svarint(4);
    w.varint(1);  // one op
    w.u8(head);
    w.u8(presence);
    fields(w);
    w.varint(0);  // no annotation keys
    w.varint(0);  // no annotations
    return f;
  };
  const auto times = [](wire::Writer& w) {
    w.svarint(0);
    w.varint(10);
  };
  ForgedBody f = one_op(0, 0, times);  // kind 0
  EXPECT_NE(decode_error(f).find("unknown kind 0"), std::string::npos) << decode_error(f);
  f = one_op(SP_OP_FORWARD, 1u << 6, [&](wire::Writer& w) { times(w); w.varint(2); });
  EXPECT_NE(decode_error(f).find("names entry 2 of a 2-entry table"), std::string::npos)
      << decode_error(f);
  f = one_op(SP_OP_COLLECTIVE, 1u << 3, [&](wire::Writer& w) { times(w); w.varint(1); w.svarint(0); });
  EXPECT_NE(decode_error(f).find("group 1 of a 1-entry table"), std::string::npos)
      << decode_error(f);
  f = one_op(SP_OP_FORWARD, 0, [](wire::Writer& w) { w.svarint(0); w.varint(UINT64_MAX); });
  EXPECT_NE(decode_error(f).find("overflows"), std::string::npos) << decode_error(f);
  f = one_op(SP_OP_FORWARD | (3u << 6), 0, times);
  EXPECT_NE(decode_error(f).find("step tag 3"), std::string::npos) << decode_error(f);
  f = one_op(SP_OP_FORWARD, 1u << 1, [&](wire::Writer& w) { times(w); w.svarint(int64_t{1} << 40); });
  EXPECT_NE(decode_error(f).find("out-of-range"), std::string::npos) << decode_error(f);
  f = one_op(SP_OP_FORWARD, 0, [](wire::Writer& w) {  // an 11-byte varint
    w.bytes(std::string(10, '\xff'));
    w.u8(1);
  });
  EXPECT_NE(decode_error(f).find("op 0 of 1"), std::string::npos) << decode_error(f);
}

TEST(SummaryCodec, NamesWithoutTheEmptyFirstEntryAreShifted) {
  StepSummary s = sample();
  s.names = {"forward", "all_reduce:dp"};
  for (auto& op : s.ops) op.name_id = op.name_id % 2;  // 0: no name, 1: names[1]
  StepSummary out;
  std::string error;
  ASSERT_TRUE(decode_summary(encode_summary(s), &out, &error)) << error;
  ASSERT_EQ(out.names.size(), 3u);
  EXPECT_EQ(out.names[0], "");
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].name_id == 0) {
      EXPECT_EQ(out.ops[i].name_id, 0u);
    } else {
      EXPECT_EQ(out.names[out.ops[i].name_id], s.names[s.ops[i].name_id]);
    }
  }
}

TEST(SummaryCodec, NullOutputIsAnError) {
  std::string error;
  EXPECT_FALSE(decode_summary(encode_summary(sample()), nullptr, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace sp::runtime
