// A StepVerdict as JSON records of the JSONL file (one object per line).
//
// A step's record stays the same size whatever the job's size: the layout (each global rank's dp
// rank and stage) is a record of its own, written before the first analysed step and again only
// when it changes, and the per-rank scores are whole only for jobs of up to kWholeRankVectorMax
// entries; beyond that a step carries the kTopRanks largest as [index, S] pairs and the median.
// At 4096 ranks the whole vectors were ~112 KB a step (350 MB an hour at 1 s steps).
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

inline constexpr size_t kWholeRankVectorMax = 64;
inline constexpr size_t kTopRanks = 16;

nlohmann::ordered_json verdict_to_json(const StepVerdict& v);

// {"event": "layout", "world", "dp_size", "pp_size", "rank_dp", "rank_stage"}.
nlohmann::ordered_json layout_to_json(const StepVerdict& v);

// True when v's layout differs from the one `last` describes (null: none written yet).
bool layout_changed(const nlohmann::ordered_json& last, const StepVerdict& v);

}  // namespace sp::online
