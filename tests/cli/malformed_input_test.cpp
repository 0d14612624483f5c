// Table-driven: each malformed input through the real `straggler-probe` binary gives exit
// code 2 and exactly one line on stderr naming the file, line, column and problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;

using sp::cli::testing::CliRun;
using sp::cli::testing::quoted;
using sp::cli::testing::run_cli;

struct Case {
  const char* trace;
  const char* meta;
  const char* error;  // the whole stderr line after "straggler-probe: error: "
};

const std::vector<Case> kCases = {
    // Trace file problems.
    {"missing_column.csv", "meta.yaml", "missing_column.csv:1: column 'gmc': missing from the header"},
    {"extra_column.csv", "meta.yaml",
     "extra_column.csv:1: column 'tp_rank': not a column of the trace schema (expected dp_rank,stage,rank,step,"
     "optype,start_ts,duration,seq_id,mc,mb_id,gmc)"},
    {"non_numeric.csv", "meta.yaml", "non_numeric.csv:3: column 'step': not an integer: 'abc'"},
    {"nan.csv", "meta.yaml", "nan.csv:3: column 'start_ts': not a finite number: 'nan'"},
    {"infinite.csv", "meta.yaml", "infinite.csv:3: column 'duration': not a finite number: 'inf'"},
    {"negative_duration.csv", "meta.yaml", "negative_duration.csv:4: column 'duration': negative duration -0.5"},
    {"duplicate.csv", "meta.yaml",
     "duplicate.csv:5: column 'seq_id': duplicate of line 2 (rank 0, step 1, optype forward-compute, seq_id 0)"},
    {"dp_rank_beyond_dp_size.csv", "meta.yaml",
     "dp_rank_beyond_dp_size.csv:3: column 'dp_rank': dp_rank 2 out of range [0, 2) given dp_size 2 in the metadata"},
    {"stage_beyond_pp_size.csv", "meta.yaml",
     "stage_beyond_pp_size.csv:3: column 'stage': stage 2 out of range [0, 2) given pp_size 2 in the metadata"},
    {"rank_beyond_world_size.csv", "meta.yaml",
     "rank_beyond_world_size.csv:3: column 'rank': rank 4 out of range [0, 4) given world_size 4 in the metadata"},
    {"mc_beyond_vpp_size.csv", "meta.yaml",
     "mc_beyond_vpp_size.csv:3: column 'mc': mc 1 out of range [-1, 1) given vpp_size 1 in the metadata"},
    {"rank_changes_place.csv", "meta.yaml",
     "rank_changes_place.csv:3: column 'dp_rank': rank 0 has dp_rank 1 here but dp_rank 0 on line 2"},
    {"unknown_optype.csv", "meta.yaml", "unknown_optype.csv:3: column 'optype': unknown op type 'forward-allreduce'"},
    {"wrong_field_count.csv", "meta.yaml", "wrong_field_count.csv:3: expected 11 fields, found 10"},
    {"blank_line.csv", "meta.yaml", "blank_line.csv:3: empty line"},
    {"empty.csv", "meta.yaml", "empty.csv: empty file (expected a header line)"},
    {"header_only.csv", "meta.yaml", "header_only.csv:1: no data rows after the header"},
    {"truncated.csv.gz", "meta.yaml", "truncated.csv.gz: truncated gzip data (unexpected end of file)"},
    {"no_such_trace.csv", "meta.yaml", "no_such_trace.csv: cannot open: No such file or directory"},
    // Metadata problems.
    {"valid.csv", "meta_missing_key.yaml", "meta_missing_key.yaml: key 'pp_size': missing"},
    {"valid.csv", "meta_world_size.yaml",
     "meta_world_size.yaml:8: key 'world_size': 8 != dp_size * pp_size * tp_size * dsp_size = 2 * 2 * 1 * 1 = 4"},
    {"valid.csv", "meta_non_integer.yaml", "meta_non_integer.yaml:5: key 'pp_size': not an integer: '2.5'"},
    {"valid.csv", "meta_zero_size.yaml", "meta_zero_size.yaml:3: key 'dp_size': 0 is not positive"},
    {"valid.csv", "meta_unknown_key.yaml",
     "meta_unknown_key.yaml:9: unknown key 'sequence_parallel' (expected trial_name, run_id, dp_size, pp_size, "
     "tp_size, dsp_size, vpp_size, world_size)"},
};

class MalformedInput : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedInput, ExitsWithCode2AndOneLineNamingTheProblem) {
  const Case& c = GetParam();
  const fs::path out = fs::temp_directory_path() / ("sp_cli_out_" + std::to_string(::getpid()));
  const CliRun r = run_cli(std::string("analyze --trace ") + c.trace + " --meta " + c.meta + " --out " + quoted(out.string()),
                           SP_MALFORMED_DIR);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, std::string("straggler-probe: error: ") + c.error + "\n");
  EXPECT_EQ(r.out, "");  // no summary, no partial output
  EXPECT_FALSE(fs::exists(out / "result.json"));
  fs::remove_all(out);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(info.param.trace) + "_" + info.param.meta;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedInput, ::testing::ValuesIn(kCases), case_name);

// Bad command lines are bad input too.
struct UsageCase {
  const char* args;
  const char* error_start;
};

class BadCommandLine : public ::testing::TestWithParam<UsageCase> {};

TEST_P(BadCommandLine, ExitsWithCode2AndOneLine) {
  const CliRun r = run_cli(GetParam().args, SP_MALFORMED_DIR);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(std::string("straggler-probe: error: ") + GetParam().error_start, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadCommandLine,
    ::testing::Values(
        UsageCase{"analyze --trace valid.csv --out /tmp/x", "--meta is required"},
        UsageCase{"analyze --trace valid.csv --meta meta.yaml --out /tmp/x --steps 5-", "--steps: '5-' is not a step"},
        UsageCase{"analyze --trace valid.csv --meta meta.yaml --out /tmp/x --steps 3-1", "--steps: '3-1' is not a step"},
        UsageCase{"analyze --trace valid.csv --meta meta.yaml --out /tmp/x --threshold -1",
                  "--threshold: must be a positive number"},
        UsageCase{"analyze --trace valid.csv --meta meta.yaml --out /tmp/x --threshold abc",
                  "Could not convert: --threshold = abc"},
        // analyze-dir's flags refuse what the environment variable of the same setting refuses,
        // in the settings table's words (cli/common/setting_bounds.h), without echoing the value.
        UsageCase{"analyze-dir run --window 1", "--window: expected an integer >= 2"},
        UsageCase{"analyze-dir run --significance 1", "--significance: expected a probability strictly between 0 and 1"},
        UsageCase{"analyze-dir run --alarm-significance nan", "--alarm-significance: expected a probability strictly between 0 and 1"},
        UsageCase{"analyze-dir run --threshold 0.5", "--threshold: expected a number >= 1"},
        UsageCase{"analyze-dir run --timeline-ranks 0", "--timeline-ranks: expected an integer >= 1"},
        UsageCase{"analyze-dir run --recap-interval -1", "--recap-interval: expected an integer >= 0"},
        UsageCase{"analyze-dir run --summary-interval -1", "--summary-interval: expected an integer >= 0"},
        UsageCase{"", "A subcommand is required"},
        UsageCase{"frobnicate", "unknown command 'frobnicate' (commands: analyze, analyze-dir; see --help)"}));

TEST(Cli, VersionAndHelpExitZero) {
  const CliRun v = run_cli("--version", SP_MALFORMED_DIR);
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("straggler-probe ", 0), 0u) << v.out;
  const CliRun h = run_cli("analyze --help", SP_MALFORMED_DIR);
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--trace"), std::string::npos);
  EXPECT_NE(h.out.find("--threshold"), std::string::npos);
}

}  // namespace
