// Where each rank runs, as the rank pipeline learns it once at start: verdicts name the worst
// rank's host and GPU, report.json and the JSONL carry the whole table. A user of a large job
// acts on a host, not on a rank number. The one type of a rank's place: the pipeline's wire row
// (rank_pipeline/src/base/rank_row.h, RankInfo) is this plus its rank and its host's leader.
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
