// `analyze` checks every option before it writes anything: a rejected option (exit 2, one
// line) leaves --out as it was, whether it did not exist or held an earlier run's outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;

using sp::cli::testing::CliRun;
using sp::cli::testing::quoted;
using sp::cli::testing::run_cli;
using sp::cli::testing::slurp;

struct OptionCase {
  const char* name;
  const char* options;  // after --trace, --meta and --out
  const char* error;    // the whole stderr line after "straggler-probe: error: "
};

// The oracle trace `nodp` has steps 5, 6 and 7 and is analysable: only the option is wrong.
const OptionCase kCases[] = {
    {"TimelineStepAbsent", "--timeline-steps 0", "--timeline-steps: none of the selected steps is available (steps 5 to 7 are)"},
    {"TimelineStepMalformed", "--timeline-steps x",
     "--timeline-steps: 'x' is not a step or a range of steps (e.g. 12 or 20-23, first <= last)"},
    {"TimelineStepNotAnalysed", "--steps 5 --timeline-steps 6", "--timeline-steps: none of the selected steps is available (steps 5 to 5 are)"},
    {"StepsAbsent", "--steps 9-12", "--steps: none of the selected steps is available (steps 5 to 7 are)"},
    {"ThresholdZero", "--threshold 0", "--threshold: must be a positive number, got 0.000000"},
};

class RejectedOption : public ::testing::TestWithParam<OptionCase> {
 protected:
  const fs::path data_ = fs::path(SP_MALFORMED_DIR) / ".." / "oracle" / "nodp";
  const fs::path out_ = fs::temp_directory_path() / ("sp_cli_options_" + std::to_string(::getpid()));
  void TearDown() override { fs::remove_all(out_); }

  CliRun analyze(const std::string& options) const {
    return run_cli("analyze --trace " + quoted((data_ / "trace.csv.gz").string()) + " --meta " +
                       quoted((data_ / "meta.yaml").string()) + " --out " + quoted(out_.string()) + " " + options,
                   data_);
  }
  void expect_rejected(const CliRun& r) const {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, std::string("straggler-probe: error: ") + GetParam().error + "\n");
    EXPECT_EQ(r.out, "");
  }
};

TEST_P(RejectedOption, CreatesNoOutputDirectory) {
  expect_rejected(analyze(GetParam().options));
  EXPECT_FALSE(fs::exists(out_));
}

TEST_P(RejectedOption, LeavesAnEarlierRunsOutputsUntouched) {
  ASSERT_EQ(analyze("").exit_code, 0);
  std::ofstream(out_ / "result.json") << "earlier";
  fs::remove(out_ / "timeline.json");
  expect_rejected(analyze(GetParam().options));
  EXPECT_EQ(slurp(out_ / "result.json"), "earlier");
  EXPECT_FALSE(fs::exists(out_ / "timeline.json"));
}

INSTANTIATE_TEST_SUITE_P(Table, RejectedOption, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<OptionCase>& c) { return std::string(c.param.name); });

TEST(OutputDirectory, AFileInItsPlaceIsRejectedBeforeTheAnalysis) {
  const fs::path data = fs::path(SP_MALFORMED_DIR) / ".." / "oracle" / "nodp";
  const fs::path out = fs::temp_directory_path() / ("sp_cli_out_file_" + std::to_string(::getpid()));
  std::ofstream(out) << "a file";
  const CliRun r = run_cli("analyze --trace trace.csv.gz --meta meta.yaml --out " + quoted(out.string()), data);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "straggler-probe: error: --out: cannot create directory " + out.string() +
                       ": it exists and is not a directory\n");
  EXPECT_EQ(slurp(out), "a file");
  fs::remove(out);
}

}  // namespace
