// Valid step summaries to start mutating from, in both wire versions, and what the summary
// fuzzers share: the checksum fix-up that lets a mutation reach the body, and a field-by-field
// comparison for round trips.
#pragma once

#include <string>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::fuzz {

// Hand-made edge cases (every optional field present and absent, wide kinds, other steps'
// labels, empty and binary strings) and the synthetic jobs' summaries (data parallel, a pipeline
// with micro-batches and sequence lengths), as the runtime would send them.
std::vector<runtime::StepSummary> seed_summaries();
// The same summaries encoded: version 2 (encode_summary) and version 1 (the format .spsum files
// written before version 2 hold; tests/data/summary_v1/sample.bin is one).
std::vector<std::string> encoded_v2(const std::vector<runtime::StepSummary>& summaries);
std::vector<std::string> encoded_v1(const std::vector<runtime::StepSummary>& summaries);
// Tokens of the summary format: its magic, both versions, count-sized words.
std::vector<std::string> summary_dictionary();

// Rewrites the header's body size and CRC-32 after a mutation (inputs shorter than the header
// are left alone), so that the mutation is judged by the body's decoder, not the checksum.
void fix_summary_checksum(std::string* payload);

// Whether two summaries hold the same fields; `why` names the first that differs.
bool same_summary(const runtime::StepSummary& a, const runtime::StepSummary& b, std::string* why);

// decode_summary, and every accepted summary round-tripped (gtest expectations):
// decode(encode(s)) == s and the re-encoding is stable.
bool decode_and_round_trip(const std::string& bytes, runtime::StepSummary* out, std::string* error);

}  // namespace sp::fuzz
