// The reference trace schema's columns, shared by the CSV parser and the cross-row checks.
// Internal to the loaders.
#pragma once

#include <array>
#include <string_view>

namespace sp::whatif::detail {

enum Column : int { kDpRank, kStage, kRank, kStep, kOptype, kStartTs, kDuration, kSeqId, kMc, kMbId, kGmc };
inline constexpr int kNumColumns = 11;
inline constexpr std::array<std::string_view, kNumColumns> kColumnNames = {
    "dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "seq_id", "mc", "mb_id", "gmc"};

// Data row i (0-based) sits on this 1-based line: the header is line 1 and blank lines are
// rejected, so the mapping is exact and later checks can name lines without storing them.
constexpr size_t line_of_row(size_t row) { return row + 2; }

}  // namespace sp::whatif::detail
