// The CSV trace parser: exact values, accepted variations, and one precise error per problem.
#include <gtest/gtest.h>

#include <string>

#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

JobMeta small_meta() {
  JobMeta m;
  m.trial_name = "T";
  m.dp_size = 2;
  m.pp_size = 2;
  m.vpp_size = 1;
  m.world_size = 4;
  return m;
}

const char* kHeader = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";

std::string error_of(const std::string& csv) {
  try {
    parse_trace_csv(csv, "t.csv", small_meta());
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TraceCsv, ParsesRowsWithExactFloat32Values) {
  const std::string csv = std::string(kHeader) +
                          "0,0,0,23,backward-compute,0.84867167472839355,0.13867968320846558,0,0,0,0\n"
                          "1,1,3,23,params-all-gather,7.1525573730468750e-7,0.015540287829935551,0,0,-1,-1\n";
  const TraceTable t = parse_trace_csv(csv, "t.csv", small_meta());
  ASSERT_EQ(t.size(), 2u);
  // 17 significant digits identify the float32 exactly; parsing must give that value bit for bit.
  EXPECT_EQ(t.start_ts[0], static_cast<double>(0.84867167472839355f));
  EXPECT_EQ(t.duration[0], static_cast<double>(0.13867968320846558f));
  EXPECT_EQ(t.start_ts[1], static_cast<double>(7.1525573730468750e-7f));
  EXPECT_EQ(t.optype[0], OpType::kBackwardCompute);
  EXPECT_EQ(t.optype[1], OpType::kParamsAllGather);
  EXPECT_EQ(t.rank[1], 3);
  EXPECT_EQ(t.stage[1], 1);
  EXPECT_EQ(t.step[1], 23);
  EXPECT_EQ(t.mb_id[1], -1);
  EXPECT_EQ(t.gmc[1], -1);
}

TEST(TraceCsv, AcceptsAnyColumnOrderCrlfAndMissingFinalNewline) {
  const std::string csv =
      "gmc,mb_id,mc,seq_id,duration,start_ts,optype,step,rank,stage,dp_rank\r\n"
      "1,2,0,5,0.5,1.25,forward-compute,7,2,1,0";
  const TraceTable t = parse_trace_csv(csv, "t.csv", small_meta());
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.dp_rank[0], 0);
  EXPECT_EQ(t.stage[0], 1);
  EXPECT_EQ(t.rank[0], 2);
  EXPECT_EQ(t.step[0], 7);
  EXPECT_EQ(t.seq_id[0], 5);
  EXPECT_EQ(t.mb_id[0], 2);
  EXPECT_EQ(t.gmc[0], 1);
  EXPECT_EQ(t.start_ts[0], 1.25);
  EXPECT_EQ(t.duration[0], 0.5);
}

TEST(TraceCsv, ErrorCarriesFileLineAndColumn) {
  const std::string csv = std::string(kHeader) + "0,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n" + "0,0,0,1,gc,0.5,-0.5,1,-1,-1,-1\n";
  try {
    parse_trace_csv(csv, "t.csv", small_meta());
    FAIL() << "expected a TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "t.csv");
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(e.column(), "duration");
    EXPECT_STREQ(e.what(), "t.csv:3: column 'duration': negative duration -0.5");
  }
}

TEST(TraceCsv, RejectsHeaderProblems) {
  EXPECT_EQ(error_of(""), "t.csv: empty file (expected a header line)");
  EXPECT_EQ(error_of("dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id\n"),
            "t.csv:1: column 'gmc': missing from the header");
  EXPECT_EQ(error_of("dp_rank,stage,rank,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n"),
            "t.csv:1: column 'rank': appears twice in the header");
  EXPECT_EQ(error_of("dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc,tp_rank\n"),
            "t.csv:1: column 'tp_rank': not a column of the trace schema (expected dp_rank,stage,rank,step,"
            "optype,start_ts,duration,seq_id,mc,mb_id,gmc)");
  EXPECT_EQ(error_of(kHeader), "t.csv:1: no data rows after the header");
}

TEST(TraceCsv, RejectsBadRows) {
  const std::string h = kHeader;
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,-1,-1\n"), "t.csv:2: expected 11 fields, found 10");
  EXPECT_EQ(error_of(h + "\n0,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: empty line");
  EXPECT_EQ(error_of(h + "0,0,0,x1,gc,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'step': not an integer: 'x1'");
  EXPECT_EQ(error_of(h + "0,0,0,1.0,gc,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'step': not an integer: '1.0'");
  EXPECT_EQ(error_of(h + "0,0,,1,gc,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'rank': empty value");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,nan,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'start_ts': not a finite number: 'nan'");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,inf,0,-1,-1,-1\n"), "t.csv:2: column 'duration': not a finite number: 'inf'");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5s,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'start_ts': not a number: '0.5s'");
  EXPECT_EQ(error_of(h + "0,0,0,1,fwd,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'optype': unknown op type 'fwd'");
  EXPECT_EQ(error_of(h + "0,0,0,-1,gc,0.5,0.1,0,-1,-1,-1\n"), "t.csv:2: column 'step': negative step -1");
}

TEST(TraceCsv, RejectsValuesThatContradictTheMetadata) {
  const std::string h = kHeader;
  EXPECT_EQ(error_of(h + "2,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:2: column 'dp_rank': dp_rank 2 out of range [0, 2) given dp_size 2 in the metadata");
  EXPECT_EQ(error_of(h + "0,3,0,1,gc,0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:2: column 'stage': stage 3 out of range [0, 2) given pp_size 2 in the metadata");
  EXPECT_EQ(error_of(h + "0,0,4,1,gc,0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:2: column 'rank': rank 4 out of range [0, 4) given world_size 4 in the metadata");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,1,-1,-1\n"),
            "t.csv:2: column 'mc': mc 1 out of range [-1, 1) given vpp_size 1 in the metadata");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,0,0,-1,2\n"),
            "t.csv:2: column 'gmc': gmc 2 out of range [-1, 2) given pp_size * vpp_size 2 in the metadata");
  EXPECT_EQ(error_of(h + "0,0,0,1,gc,0.5,0.1,-1,-1,-1,-1\n"),
            "t.csv:2: column 'seq_id': seq_id -1 out of range [0, 2^31)");
}

TEST(TraceCsv, RejectsDuplicatesNamingBothLines) {
  const std::string h = kHeader;
  const std::string csv = h + "0,0,0,1,gc,0.5,0.1,0,-1,-1,-1\n"   // line 2
                              "0,0,0,1,gc,0.7,0.1,1,-1,-1,-1\n"   // line 3
                              "0,0,0,2,gc,0.5,0.1,0,-1,-1,-1\n"   // line 4: other step
                              "0,0,0,1,gc,0.9,0.1,1,-1,-1,-1\n"   // line 5: repeats line 3
                              "0,0,0,1,gc,0.9,0.1,0,-1,-1,-1\n";  // line 6: repeats line 2
  EXPECT_EQ(error_of(csv), "t.csv:5: column 'seq_id': duplicate of line 3 (rank 0, step 1, optype gc, seq_id 1)");
}

TEST(TraceCsv, RejectsARankThatMovesInTheJob) {
  const std::string h = kHeader;
  EXPECT_EQ(error_of(h + "0,0,1,1,gc,0.5,0.1,0,-1,-1,-1\n0,1,1,2,gc,0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:3: column 'stage': rank 1 has stage 1 here but stage 0 on line 2");
  EXPECT_EQ(error_of(h + "0,0,1,1,gc,0.5,0.1,0,-1,-1,-1\n1,0,1,2,gc,0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:3: column 'dp_rank': rank 1 has dp_rank 1 here but dp_rank 0 on line 2");
}

TEST(TraceCsv, QuotesGarbageOnOneLine) {
  const std::string h = kHeader;
  EXPECT_EQ(error_of(h + "0,0,0,1,\x01\x7f" + std::string(50, 'a') + ",0.5,0.1,0,-1,-1,-1\n"),
            "t.csv:2: column 'optype': unknown op type '\\x01\\x7f" + std::string(38, 'a') + "...'");
}

// The bundled reference traces load completely, values exact (row counts: the source Parquet's).
TEST(TraceCsv, LoadsTheReferenceTraces) {
  for (const auto& [name, rows] : {std::pair<std::string, size_t>{"ST", 6784}, {"SE", 107328}}) {
    const std::string dir = std::string(SP_TEST_DATA_DIR) + "/" + name;
    const JobMeta meta = load_meta(dir + "/meta.yaml");
    const TraceTable t = load_trace_csv(dir + "/trace.csv.gz", meta);
    EXPECT_EQ(t.size(), rows) << name;
    EXPECT_EQ(meta.trial_name, name);
  }
  const std::string st = std::string(SP_TEST_DATA_DIR) + "/ST";
  const TraceTable t = load_trace_csv(st + "/trace.csv.gz", load_meta(st + "/meta.yaml"));
  // First row: 0,0,0,23,backward-compute,0.84867167472839355,0.13867968320846558,0,0,0,0
  EXPECT_EQ(t.step[0], 23);
  EXPECT_EQ(t.optype[0], OpType::kBackwardCompute);
  EXPECT_EQ(t.start_ts[0], static_cast<double>(0.84867167472839355f));
  EXPECT_EQ(t.duration[0], static_cast<double>(0.13867968320846558f));
}

}  // namespace
}  // namespace sp::whatif
