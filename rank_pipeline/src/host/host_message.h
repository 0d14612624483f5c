// What a host's leader posts for one step (appended to the store key d/<step>, so that rank 0
// reads every host's message of a step in one get): the summaries of the host's ranks that have
// the step, and the ranks that do not (they skipped it, or stopped), so that rank 0 can tell a
// whole step from an incomplete one without asking every rank.
//
// Wire (v: varint, z: zigzag varint): u32 length of what follows, magic "SPHM", u8 version (1),
// z step, z leader rank, v summary count, per summary: z rank, v length, the encoded summary
// (step_summary.h, with its own checksum), v missing count, per missing rank: z rank.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sp::rank_pipeline {

struct HostMessage {
  int64_t step = 0;
  int leader = -1;
  std::vector<std::pair<int, std::string>> summaries;  // (rank, encoded summary)
  std::vector<int> missing;
};

void append_host_message(const HostMessage& m, std::string* out);

// Splits the concatenated messages of one key. false with one line in *error at the first one
// that is not well formed (the messages before it are in *out).
bool parse_host_messages(std::string_view bytes, std::vector<HostMessage>* out, std::string* error);

}  // namespace sp::rank_pipeline
