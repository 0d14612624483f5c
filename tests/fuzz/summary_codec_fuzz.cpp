// The StepSummary codec (runtime/src/summary_codec*.cpp): what rank 0 decodes from every other
// rank (through the store) and analyze-dir from .spsum files. Mutated and truncated payloads of
// both wire versions, most with the checksum fixed up so that the mutation reaches the body's
// decoder; every answer is an error line or a summary that round-trips.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fuzz_engine.h"
#include "summary_seeds.h"

namespace sp::fuzz {
namespace {

Outcome decode(const std::string& bytes) {
  runtime::StepSummary s;
  Outcome o;
  o.accepted = decode_and_round_trip(bytes, &s, &o.error);
  if (o.accepted) {  // what the decoder promises about every summary it accepts
    for (const sp_event& e : s.ops) {
      EXPECT_GE(e.end_ns, e.start_ns);
      EXPECT_LT(e.name_id, s.names.size());
      EXPECT_TRUE(e.kind > 0 && e.kind < SP_OP_KIND_MAX);
    }
    EXPECT_TRUE(!s.names.empty() && s.names[0].empty());
  }
  return o;
}

Corpus corpus(std::vector<std::string> seeds) {
  Corpus c;
  c.seeds = std::move(seeds);
  c.dictionary = summary_dictionary();
  c.fixup = fix_summary_checksum;
  return c;
}

TEST(FuzzSummaryCodec, Version2) {
  const Stats st = run_cases("summary codec v2", corpus(encoded_v2(seed_summaries())), case_count(),
                             decode);
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);  // the fix-up lets mutations through to the body and beyond
}

TEST(FuzzSummaryCodec, Version1) {
  std::vector<std::string> seeds = encoded_v1(seed_summaries());
  std::ifstream in(SP_SUMMARY_V1_SAMPLE, std::ios::binary);
  ASSERT_TRUE(in) << SP_SUMMARY_V1_SAMPLE;
  // Read through a stringstream: g++ 12 at -O3 warns (null-dereference) inside
  // istreambuf_iterator's inlined sbumpc.
  std::ostringstream bytes;
  bytes << in.rdbuf();
  seeds.push_back(bytes.str());
  for (const std::string& s : seeds) ASSERT_TRUE(decode(s).accepted) << "a v1 seed is not valid";
  const Stats st = run_cases("summary codec v1", corpus(std::move(seeds)), case_count(), decode);
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// Bytes that are a summary only in their first 16: any body, the header made to match it.
TEST(FuzzSummaryCodec, RandomBodiesBehindAValidHeader) {
  Mutator m(base_seed() ^ 0x5053534d);
  Corpus c;
  c.seeds = {std::string("SPSM\x02\x00\x00\x00", 8) + std::string(8, '\0'),
             std::string("SPSM\x01\x00\x00\x00", 8) + std::string(8, '\0')};
  c.dictionary = summary_dictionary();
  c.fixup = [&m](std::string* p) {
    if (p->size() >= 16) {
      p->resize(16);
      *p += m.random_bytes(m.rng().chance(90) ? 48 : 400);
    }
    fix_summary_checksum(p);
  };
  const Stats st = run_cases("summary codec random bodies", c, case_count(), decode);
  EXPECT_GT(st.rejected, st.cases / 2);
}

}  // namespace
}  // namespace sp::fuzz
