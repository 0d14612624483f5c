// A rank's row of the rank table as it travels: where it runs (its host, its local rank on that
// host and its device) and which rank it is; online/.../rank_table.h is the table itself. Every
// rank sends its own row once, at start (not in every summary); rank 0 collects the table and
// hands it to the analysis, so that a verdict names a host and a GPU, not only a rank number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "straggler_probe/online/rank_table.h"

namespace sp::rank_pipeline {

// A row as it travels and as rank 0 keeps it: where the rank runs (online::RankPlace, the one
// type the analysis, the report and the metrics read: host, local rank, CUDA device; a host ""
// in the table: not reported yet), and for the transport which rank it is and its host's leader.
struct RankInfo : online::RankPlace {
  int rank = -1;
  int leader = -1;  // the rank that aggregates this host's summaries (host protocol), or -1
};

// A row from its five wire fields, in the wire's order (tests and fuzz seeds).
inline RankInfo rank_row(int rank, int leader, int local_rank, int device, std::string host) {
  RankInfo row;
  row.rank = rank;
  row.leader = leader;
  row.local_rank = local_rank;
  row.device = device;
  row.host = std::move(host);
  return row;
}

// The table as the analysis takes it (index: global rank).
online::RankTable places_of(const std::vector<RankInfo>& rows);

// One row: "<rank> <leader> <local_rank> <device> <host>\n".
std::string encode_rank_row(const RankInfo& info);

// Parses concatenated rows into table[rank] (table sized to world_size by the caller). Returns
// how many rows were rejected (they do not parse, name a rank outside the world, or contradict
// an earlier row for the same rank); *first_error says what was wrong with the first of them.
// The other rows are taken.
size_t parse_rank_rows(std::string_view text, std::vector<RankInfo>* table,
                       std::string* first_error);

// A host name as it may travel and be printed: letters, digits, '.', '-' and '_', at most 64
// characters; anything else becomes '_' (an empty name becomes "unknown").
std::string clean_host_name(std::string_view name);

}  // namespace sp::rank_pipeline
