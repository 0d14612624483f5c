// End to end: on each reference trace, every number of result.json, ms.json and mw.json must
// agree with the artifact's expected files within 1e-6 relative, with the same keys in the same
// order.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/whatif/analysis.h"
#include "straggler_probe/whatif/result_json.h"
#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

using nlohmann::ordered_json;

constexpr double kRelTol = 1e-6;

ordered_json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return ordered_json::parse(in);
}

// Appends one line per difference: path, what differs.
void compare(const ordered_json& got, const ordered_json& want, const std::string& path,
             std::vector<std::string>& diffs) {
  if (want.is_object()) {
    if (!got.is_object()) {
      diffs.push_back(path + ": expected an object, got " + got.dump());
      return;
    }
    std::vector<std::string> gk, wk;
    for (auto it = got.begin(); it != got.end(); ++it) gk.push_back(it.key());
    for (auto it = want.begin(); it != want.end(); ++it) wk.push_back(it.key());
    if (gk != wk) {
      std::string g, w;
      for (const auto& k : gk) g += k + " ";
      for (const auto& k : wk) w += k + " ";
      diffs.push_back(path + ": keys [" + g + "] != expected [" + w + "]");
    }
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (got.contains(it.key())) compare(got[it.key()], it.value(), path + "/" + it.key(), diffs);
    }
    return;
  }
  if (want.is_number()) {
    if (!got.is_number()) {
      diffs.push_back(path + ": expected a number, got " + got.dump());
      return;
    }
    const double g = got.get<double>(), w = want.get<double>();
    const double tol = w == 0 ? 1e-12 : kRelTol * std::abs(w);
    if (!(std::abs(g - w) <= tol)) {
      std::ostringstream os;
      os.precision(17);
      os << path << ": " << g << " != expected " << w << " (rel " << std::abs(g - w) / std::abs(w) << ")";
      diffs.push_back(os.str());
    }
    return;
  }
  if (got != want) diffs.push_back(path + ": " + got.dump() + " != expected " + want.dump());
}

void expect_same(const ordered_json& got, const ordered_json& want, const std::string& what) {
  std::vector<std::string> diffs;
  compare(got, want, what, diffs);
  std::string msg;
  for (size_t i = 0; i < diffs.size() && i < 30; ++i) msg += diffs[i] + "\n";
  EXPECT_TRUE(diffs.empty()) << diffs.size() << " difference(s):\n" << msg;
}

size_t count_numbers(const ordered_json& j) {
  if (j.is_number()) return 1;
  size_t n = 0;
  if (j.is_structured()) {
    for (const auto& x : j) n += count_numbers(x);
  }
  return n;
}

// Runs the analysis on tests/data/<name> (with the steps listed in its steps.txt, if any, in
// that order) and compares all three outputs.
void run_reference(const std::string& name) {
  const std::string dir = std::string(SP_WHATIF_TEST_DATA_DIR) + "/" + name;
  const JobMeta meta = load_meta(dir + "/meta.yaml");
  const TraceTable trace = load_trace_csv(dir + "/trace.csv.gz", meta);
  AnalyzeOptions options;
  if (std::ifstream steps_file(dir + "/steps.txt"); steps_file) {
    options.steps.emplace();
    for (int64_t s; steps_file >> s;) options.steps->push_back(s);
  }
  Analysis analysis(trace, meta, options);

  const ordered_json want_result = read_json(dir + "/result.json");
  ASSERT_GT(count_numbers(want_result), 30u);
  expect_same(result_to_json(analysis.result()), want_result, name + "/result.json");

  expect_same(ms_to_json(analysis.compute_ms()), read_json(dir + "/ms.json"), name + "/ms.json");

  const auto mw = analysis.compute_mw();
  ASSERT_TRUE(mw.has_value());
  expect_same(mw_to_json(*mw), read_json(dir + "/mw.json"), name + "/mw.json");
}

TEST(Reference, StageImbalanceTraceST) { run_reference("ST"); }

TEST(Reference, SequenceImbalanceTraceSE) { run_reference("SE"); }

// Synthetic traces with the artifact's own outputs (tests/data/README.md).
TEST(OracleCase, VirtualPipelineWithOverlappedGradReduce) { run_reference("oracle/vpp_overlap"); }
TEST(OracleCase, NoPipeline) { run_reference("oracle/pp1"); }
TEST(OracleCase, LaunchDelayAttribution) { run_reference("oracle/launch"); }
TEST(OracleCase, NoDataParallelism) { run_reference("oracle/nodp"); }
TEST(OracleCase, SelectedSteps) { run_reference("oracle/steps"); }

}  // namespace
}  // namespace sp::whatif
