// The step summary wire format: exact round trips, and one clear error for every way a payload
// can be truncated, corrupted or forged.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>

#include "crc32.h"
#include "straggler_probe/step_summary.h"

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

// Rewrites the header checksum so that a deliberately forged body gets past it.
void fix_crc(std::string* bytes) {
  const uint32_t crc = crc32(bytes->data() + 16, bytes->size() - 16);
  for (int i = 0; i < 4; ++i) (*bytes)[12 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
}

void put_u32(std::string* bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
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

TEST(SummaryCodec, IsLittleEndianWithMagicAndVersion) {
  const std::string bytes = encode_summary(sample());
  EXPECT_EQ(bytes.substr(0, 4), "SPSM");
  EXPECT_EQ(bytes[4], 1);
  EXPECT_EQ(bytes[5], 0);
  // Body starts with rank 3 as a little-endian i32.
  EXPECT_EQ(bytes.substr(16, 4), std::string("\x03\x00\x00\x00", 4));
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
  bad[4] = 2;
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("version 2 is not supported"), std::string::npos) << error;

  bad = good + "xx";
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("2 unexpected bytes"), std::string::npos) << error;

  bad = good;
  bad[good.size() - 1] ^= 1;
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
}

TEST(SummaryCodec, ForgedCountsAndFieldsBehindAValidChecksumAreRejected) {
  const std::string good = encode_summary(sample());
  constexpr size_t kNameCount = 16 + 56;
  StepSummary out;
  std::string error;

  std::string bad = good;
  put_u32(&bad, kNameCount, 0xFFFFFFFFu);  // a huge count must not allocate
  fix_crc(&bad);
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("bad name count"), std::string::npos) << error;

  // Find the first op: after 3 names ("", "forward", "all_reduce:dp") and the op count.
  const size_t first_op = kNameCount + 4 + (4 + 0) + (4 + 7) + (4 + 13) + 4;
  bad = good;
  put_u32(&bad, first_op + 40, 0);  // kind 0
  fix_crc(&bad);
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("unknown kind 0"), std::string::npos) << error;

  bad = good;
  put_u32(&bad, first_op + 64, 3);  // name_id past the 3-entry table
  fix_crc(&bad);
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("names entry 3"), std::string::npos) << error;

  bad = good;
  for (int i = 0; i < 8; ++i) bad[first_op + 8 + static_cast<size_t>(i)] = 0;  // end 0 < start
  fix_crc(&bad);
  EXPECT_FALSE(decode_summary(bad, &out, &error));
  EXPECT_NE(error.find("ends before it starts"), std::string::npos) << error;
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
