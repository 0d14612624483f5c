// The CSV loader reads a row in the schema's column order by a fast path and any other row
// field by field (csv_row_parser.h). The same rows written in both column orders must give the
// same table and the same errors: a header in another order takes the general path only.
#include <gtest/gtest.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

#include "straggler_probe/whatif/trace_loader.h"

#include "trace_table_expect.h"

namespace sp::whatif {
namespace {

JobMeta meta() {
  JobMeta m;
  m.trial_name = "T";
  m.dp_size = 2;
  m.pp_size = 2;
  m.vpp_size = 2;
  m.world_size = 4;
  return m;
}

using Row = std::array<std::string, 11>;  // schema order

const char* kSchemaHeader = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc";
const char* kReversedHeader = "gmc,mb_id,mc,seq_id,duration,start_ts,optype,step,rank,stage,dp_rank";

// The rows as CSV with the schema's header (reversed: the columns in reverse order), each line
// ending in its own `endings` entry (cycled), the last one as given.
std::string csv(const std::vector<Row>& rows, bool reversed, const std::vector<std::string>& endings) {
  std::ostringstream out;
  out << (reversed ? kReversedHeader : kSchemaHeader) << "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < 11; ++c) out << (c ? "," : "") << rows[i][reversed ? 10 - c : c];
    out << endings[i % endings.size()];
  }
  return out.str();
}

std::string error_of(const std::string& text) {
  try {
    parse_trace_csv(text, "t.csv", meta());
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// Valid rows in unusual but accepted forms: exponents, no leading digit, "-0", zero times,
// changes of op type, the largest ids the metadata allows.
const std::vector<Row> kUnusualRows = {
    {"0", "0", "0", "1", "forward-compute", "1e-1", "5E-1", "0", "0", "0", "0"},
    {"0", "0", "0", "1", "forward-compute", ".5", "5.", "1", "1", "1", "3"},
    {"0", "0", "0", "1", "forward-send", "-0", "0", "2", "-1", "-1", "-1"},
    {"1", "1", "3", "999999999999999999", "backward-compute", "0.84867167472839355", "0.0", "2147483646", "-0",
     "2147483646", "1"},
    {"1", "1", "3", "2", "optimizer", "7.1525573730468750e-7", "1.000000000000000000000000000000001", "0", "-1",
     "-1", "-1"},
};

TEST(CsvRowPaths, ReadUnusualValidRowsAlike) {
  for (const std::vector<std::string>& endings :
       {std::vector<std::string>{"\n"}, {"\r\n"}, {"\n", "\r\n"}, {"\n", "\n", "\n", "\n", ""}}) {
    const TraceTable fast = parse_trace_csv(csv(kUnusualRows, false, endings), "t.csv", meta());
    const TraceTable general = parse_trace_csv(csv(kUnusualRows, true, endings), "t.csv", meta());
    testing::expect_same_table(fast, general);
    EXPECT_EQ(fast.step[3], 999999999999999999);
    EXPECT_EQ(fast.start_ts[1], 0.5);
    EXPECT_EQ(fast.mc[3], 0);
  }
}

// One bad field in an otherwise valid row: both orders name the same problem on the same line.
TEST(CsvRowPaths, RejectBadRowsAlike) {
  const Row good = {"0", "0", "0", "1", "gc", "0.5", "0.1", "0", "-1", "-1", "-1"};
  const std::vector<std::pair<size_t, std::string>> bad_fields = {
      {0, "+0"},        {0, "-"},        {0, "2"},       {1, ""},     {2, " 1"},
      {3, "-1"},        {3, "1.0"},      {3, "0000000000000000001"}, {4, "gcx"},  {4, "g"},
      {4, ""},          {5, "+0.5"},     {5, "0.5 "},    {5, "1.5e"}, {5, "0x1p3"},
      {5, "nan"},       {5, "1e400"},    {6, "-0.1"},    {6, "inf"},  {6, "0.1\t"},
      {7, "2147483647"}, {8, "2"},       {9, "-2"},      {10, "4"},   {10, "0\x7f"}};
  for (const auto& [column, value] : bad_fields) {
    Row row = good;
    row[column] = value;
    const std::vector<Row> rows = {good, row};
    SCOPED_TRACE("column " + std::to_string(column) + " = '" + value + "'");
    const std::string fast = error_of(csv(rows, false, {"\n"}));
    EXPECT_NE(fast, "(no error)");
    EXPECT_EQ(fast, error_of(csv(rows, true, {"\n"})));
  }
  // Field-count and line problems, which only the schema-order text can show the same way.
  const std::string h = std::string(kSchemaHeader) + "\n";
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,-1,-1,-1,\n"), "t.csv:2: expected 11 fields, found 12");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n\r\n"), "t.csv:3: empty line");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n0,0,0,1,gc"), "t.csv:3: expected 11 fields, found 5");
}

}  // namespace
}  // namespace sp::whatif
