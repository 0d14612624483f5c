// Traces large enough that the parser splits their rows into pieces parsed on several threads
// (above 4 MiB): the table keeps file order, and an error is the first in file order with its
// true line number, wherever the pieces were cut.
#include <gtest/gtest.h>

#include <string>

#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

constexpr size_t kRows = 200000;  // about 9 MB of text

JobMeta meta() {
  JobMeta m;
  m.trial_name = "T";
  m.dp_size = 2;
  m.pp_size = 2;
  m.world_size = 4;
  return m;
}

// Row i: rank i % 4 (dp rank = rank % 2, stage = rank / 2), seq_id i, start i s.
std::string row(size_t i, const std::string& step = "1") {
  const size_t rank = i % 4;
  return std::to_string(rank % 2) + "," + std::to_string(rank / 2) + "," + std::to_string(rank) + "," + step +
         ",forward-compute," + std::to_string(i) + ",0.25," + std::to_string(i) + ",0,0,0\n";
}

std::string trace(size_t bad_row = kRows, const std::string& bad_step = "") {
  std::string csv = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";
  for (size_t i = 0; i < kRows; ++i) csv += i == bad_row ? row(i, bad_step) : row(i);
  return csv;
}

std::string error_of(const std::string& csv) {
  try {
    parse_trace_csv(csv, "t.csv", meta());
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LargeTraceCsv, KeepsEveryRowInFileOrder) {
  const TraceTable t = parse_trace_csv(trace(), "t.csv", meta());
  ASSERT_EQ(t.size(), kRows);
  for (size_t i = 0; i < kRows; ++i) {
    ASSERT_EQ(t.seq_id[i], static_cast<int32_t>(i));
    ASSERT_EQ(t.rank[i], static_cast<int32_t>(i % 4));
    ASSERT_EQ(t.start_ts[i], static_cast<double>(i));
  }
}

TEST(LargeTraceCsv, NamesTheTrueLineOfAnErrorLateInTheFile) {
  EXPECT_EQ(error_of(trace(kRows - 3, "x")), "t.csv:" + std::to_string(kRows - 1) + ": column 'step': not an integer: 'x'");
}

TEST(LargeTraceCsv, ReportsTheFirstOfTwoErrorsInFileOrder) {
  std::string csv = trace(kRows - 3, "x");
  const std::string early = row(10);
  csv.replace(csv.find(early), early.size(), row(10, "-1"));
  EXPECT_EQ(error_of(csv), "t.csv:12: column 'step': negative step -1");
}

TEST(LargeTraceCsv, FindsADuplicateAcrossPieces) {
  std::string csv = trace();
  csv += row(4);  // rank 0, step 1, seq_id 4 again, on the last line
  EXPECT_EQ(error_of(csv), "t.csv:" + std::to_string(kRows + 2) +
                               ": column 'seq_id': duplicate of line 6 (rank 0, step 1, optype forward-compute, seq_id 4)");
}

TEST(LargeTraceCsv, RejectsABlankLastLine) {
  EXPECT_EQ(error_of(trace() + "\n"), "t.csv:" + std::to_string(kRows + 2) + ": empty line");
}

}  // namespace
}  // namespace sp::whatif
