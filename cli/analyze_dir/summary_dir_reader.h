// Reads a directory of per-rank step-summary files (<dir>/rank<R>.spsum), as written by ranks
// without Python under LD_PRELOAD with STRAGGLER_PROBE_OUT_DIR, framed as
// straggler_probe/summary_file.h says (records [uint32 little-endian length][encoded StepSummary]).
//
// Two stages so that bad input is reported before any output and memory stays bounded:
// index_summary_dir() reads and validates everything once, keeping only (step, offset, length)
// per record; SummaryDirIndex::load() then reads one record back when it is analysed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "straggler_probe/step_summary.h"

namespace sp::cli {

// Where one rank's summary of one step lies in its file.
struct SummaryRecord {
  uint64_t offset = 0;  // of the record's length prefix
  uint32_t length = 0;  // of the summary bytes after the prefix
  uint32_t index = 0;   // record number in the file, from 0
};

struct RankSummaryFile {
  int32_t rank = 0;
  std::string path;
  std::map<int64_t, SummaryRecord> steps;  // step -> its record
};

struct SummaryDirIndex {
  int32_t world_size = 0;
  std::vector<RankSummaryFile> ranks;  // ranks[r] is rank r's file; size() == world_size
  // Files that end inside their last record (a rank killed while writing), one line each
  // naming the file, record and byte; that record is left out and the caller warns.
  std::vector<std::string> torn_tails;

  // Every step some rank has a summary for, in order.
  std::vector<int64_t> all_steps() const;
  // Ranks without a summary of `step` (empty: the step is complete).
  std::vector<int32_t> missing_ranks(int64_t step) const;
  // Reads and decodes rank `rank`'s summary of `step` (which must be in its index). Throws
  // BadInput when the file changed since it was indexed.
  runtime::StepSummary load(int32_t rank, int64_t step) const;
};

// Validates the directory and indexes every record. Throws BadInput with one line naming the
// file, the record (number and byte offset) and the problem: no rank*.spsum file, a badly named
// one, a length that is not a summary's, an undecodable summary, a summary
// of another rank than the file's, a world size that differs between summaries, a rank outside
// the world, a step twice in one file, a missing rank file, or no summary at all. A file cut
// short inside its last record is not an error: see torn_tails.
SummaryDirIndex index_summary_dir(const std::string& dir);

}  // namespace sp::cli
