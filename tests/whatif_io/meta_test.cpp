// meta.yaml: the accepted flat format and its errors.
#include <gtest/gtest.h>

#include <string>

#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

const std::string kGood =
    "trial_name: ST\nrun_id: 0\ndp_size: 2\ndsp_size: 1\npp_size: 4\ntp_size: 1\nvpp_size: 1\nworld_size: 8\n";

std::string error_of(const std::string& yaml) {
  try {
    parse_meta(yaml, "meta.yaml");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  return s.replace(s.find(from), from.size(), to);
}

TEST(MetaYaml, ParsesTheArtifactFormat) {
  const JobMeta m = parse_meta(kGood, "meta.yaml");
  EXPECT_EQ(m.trial_name, "ST");
  EXPECT_EQ(m.run_id, 0);
  EXPECT_EQ(m.dp_size, 2);
  EXPECT_EQ(m.pp_size, 4);
  EXPECT_EQ(m.tp_size, 1);
  EXPECT_EQ(m.dsp_size, 1);
  EXPECT_EQ(m.vpp_size, 1);
  EXPECT_EQ(m.world_size, 8);
}

TEST(MetaYaml, AcceptsCommentsQuotesCrlfAndAMissingRunId) {
  const std::string yaml =
      "# job\r\ntrial_name: \"my job\"\r\n\r\ndp_size: 2   # replicas\r\ndsp_size: 1\r\npp_size: 4\r\n"
      "tp_size: 1\r\nvpp_size: 2\r\nworld_size: 8\r\n";
  const JobMeta m = parse_meta(yaml, "meta.yaml");
  EXPECT_EQ(m.trial_name, "my job");
  EXPECT_EQ(m.run_id, 0);
  EXPECT_EQ(m.dp_size, 2);
  EXPECT_EQ(m.vpp_size, 2);
}

TEST(MetaYaml, RejectsEachProblemWithItsLine) {
  EXPECT_EQ(error_of(""), "meta.yaml: empty file (expected 'key: value' lines)");
  EXPECT_EQ(error_of(replace(kGood, "pp_size: 4\n", "")), "meta.yaml: key 'pp_size': missing");
  EXPECT_EQ(error_of(replace(kGood, "world_size: 8", "world_size: 16")),
            "meta.yaml:8: key 'world_size': 16 != dp_size * pp_size * tp_size * dsp_size = 2 * 4 * 1 * 1 = 8");
  EXPECT_EQ(error_of(replace(kGood, "dp_size: 2", "dp_size: two")), "meta.yaml:3: key 'dp_size': not an integer: 'two'");
  EXPECT_EQ(error_of(replace(kGood, "dp_size: 2", "dp_size: 2.0")), "meta.yaml:3: key 'dp_size': not an integer: '2.0'");
  EXPECT_EQ(error_of(replace(kGood, "tp_size: 1", "tp_size: 0")), "meta.yaml:6: key 'tp_size': 0 is not positive");
  EXPECT_EQ(error_of(replace(kGood, "run_id: 0", "run_id: -1")), "meta.yaml:2: key 'run_id': -1 is negative");
  EXPECT_EQ(error_of(kGood + "cp_size: 2\n"),
            "meta.yaml:9: unknown key 'cp_size' (expected trial_name, run_id, dp_size, pp_size, tp_size, dsp_size, "
            "vpp_size, world_size)");
  EXPECT_EQ(error_of(kGood + "dp_size: 2\n"), "meta.yaml:9: key 'dp_size': repeated (first on line 3)");
  EXPECT_EQ(error_of(replace(kGood, "tp_size: 1", "tp_size:")), "meta.yaml:6: key 'tp_size': empty value");
  EXPECT_EQ(error_of(replace(kGood, "tp_size: 1", "tp_size 1")), "meta.yaml:6: expected 'key: value'");
  EXPECT_EQ(error_of(replace(kGood, "tp_size: 1", "  tp_size: 1")),
            "meta.yaml:6: indented line: only flat 'key: value' lines are supported");
}

}  // namespace
}  // namespace sp::whatif
