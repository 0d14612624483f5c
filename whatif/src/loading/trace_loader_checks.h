// Checks that need more than one row: duplicates and each rank's place in the job.
// Internal to the loaders.
#pragma once

#include <string>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif::detail {

// Throws TraceError at the first row (by line) that repeats an earlier (rank, step, optype,
// seq_id), or that puts a rank at a different dp_rank or stage than its first row did.
// Expects ranks already checked to lie in [0, meta.world_size).
void check_cross_row(const TraceTable& t, const JobMeta& meta, const std::string& file_label);

}  // namespace sp::whatif::detail
