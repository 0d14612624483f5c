// Where each rank runs, as the rank pipeline learns it once at start (rank_pipeline/src/
// rank_table.h): verdicts name the worst rank's host and GPU, report.json and the JSONL carry the
// whole table. A user of a large job acts on a host, not on a rank number.
#pragma once

#include <string>
#include <vector>

namespace sp::online {

struct RankPlace {
  std::string host;     // "" : not known
  int local_rank = -1;  // -1 : not known
  int device = -1;      // CUDA device; -1 : none or not known
};

using RankTable = std::vector<RankPlace>;  // index: global rank

}  // namespace sp::online
