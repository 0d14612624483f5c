// The Chrome/Perfetto timeline: valid JSON, one process per rank and timeline, stream
// threads, event counts, and step layout.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "straggler_probe/whatif/report_timeline.h"

namespace sp::whatif {
namespace {

// Two ranks (dp 0 and 1 on stage 0), two steps, a compute op and a collective per rank.
struct Fixture {
  JobMeta meta;
  TraceTable trace;
  std::vector<double> ideal_start, ideal_end;
  Fixture() {
    // Built by designated initialisers: assigning a short literal to the string member trips
    // GCC 12's false -Wrestrict warning.
    meta = JobMeta{.trial_name = "T", .dp_size = 2, .world_size = 2};
    for (int64_t step : {5, 3}) {
      for (int32_t r : {0, 1}) {
        trace.push_back(r, 0, r, step, OpType::kForwardCompute, 0.0, 1.0 + r, 0, 0, 7, 0);
        trace.push_back(r, 0, r, step, OpType::kGradsReduceScatter, 2.0 + r, 0.5, 0, 0, -1, -1);
        ideal_start.insert(ideal_start.end(), {0.0, 1.5});
        ideal_end.insert(ideal_end.end(), {1.5, 2.0});
      }
    }
  }
};

nlohmann::json write(const TimelineInput& in, size_t* events = nullptr) {
  std::ostringstream os;
  const size_t n = write_timeline_json(in, os);
  if (events) *events = n;
  return nlohmann::json::parse(os.str());
}

TEST(Timeline, HasProcessesThreadsAndEventsForRealAndIdeal) {
  Fixture f;
  size_t n = 0;
  const auto doc = write({&f.trace, &f.meta, {}, {}, f.ideal_start, f.ideal_end, {}}, &n);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  std::map<int, std::string> process_names;
  std::map<int, std::set<std::string>> thread_names;
  size_t complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["pid"]].insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e["args"].contains("step"));
    }
  }
  EXPECT_EQ(n, 16u);  // 8 rows, real and ideal
  EXPECT_EQ(complete, 16u);
  const std::map<int, std::string> expected = {
      {0, "rank 0 (dp 0, stage 0)"}, {1, "rank 1 (dp 1, stage 0)"}, {2, "rank 0 (ideal)"}, {3, "rank 1 (ideal)"}};
  EXPECT_EQ(process_names, expected);
  for (int pid = 0; pid < 4; ++pid) {
    EXPECT_EQ(thread_names[pid], (std::set<std::string>{"compute", "pp send", "pp recv", "dp comm", "sync comm"}));
  }
}

TEST(Timeline, LaysStepsEndToEndInMicroseconds) {
  Fixture f;
  const auto doc = write({&f.trace, &f.meta, {}, {}, f.ideal_start, f.ideal_end, {}});
  std::map<std::pair<int, int64_t>, std::vector<double>> ts;  // (pid, step) -> ts of events
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") ts[{e["pid"].get<int>(), e["args"]["step"].get<int64_t>()}].push_back(e["ts"].get<double>());
  }
  auto at = [&](int pid, int64_t step, size_t i) { return ts[std::make_pair(pid, step)].at(i); };
  // Step 3 comes first, from 0; its window ends with rank 1's collective at 3.0 + 0.5 s, so
  // step 5 starts 10% later, at 3.85 s.
  EXPECT_DOUBLE_EQ(at(0, 3, 0), 0.0);
  EXPECT_DOUBLE_EQ(at(0, 5, 0), 3.85e6);
  EXPECT_DOUBLE_EQ(at(1, 5, 1), 3.85e6 + 3.0e6);
  // The ideal copy of a step shares the real one's shift.
  EXPECT_DOUBLE_EQ(at(2, 5, 1), 3.85e6 + 1.5e6);
}

TEST(Timeline, SelectsStepsAndCanOmitTheIdeal) {
  Fixture f;
  size_t n = 0;
  const auto doc = write({&f.trace, &f.meta, {}, {}, {}, {}, {5}}, &n);
  EXPECT_EQ(n, 4u);
  std::set<int> pids;
  for (const auto& e : doc["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["ph"] == "X") {
      EXPECT_EQ(e["args"]["step"], 5);
    }
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
}

TEST(Timeline, ArgsCarryMicroBatchOnlyWhereItApplies) {
  Fixture f;
  const auto doc = write({&f.trace, &f.meta, {}, {}, {}, {}, {3}});
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["name"] == "forward-compute") {
      EXPECT_EQ(e["args"]["mb"], 7);
      EXPECT_EQ(e["cat"], "compute");
      EXPECT_EQ(e["tid"], 0);
    } else {
      EXPECT_FALSE(e["args"].contains("mb"));
      EXPECT_EQ(e["cat"], "dp comm");
      EXPECT_EQ(e["tid"], 3);
    }
  }
}

TEST(Timeline, UsesGivenRealTimesAndSkipsRowsWithoutAnIdeal) {
  Fixture f;
  std::vector<double> real_start(f.trace.size(), 0.25), real_end(f.trace.size(), 0.75);
  f.ideal_start[0] = std::nan("");
  size_t n = 0;
  write({&f.trace, &f.meta, real_start, real_end, f.ideal_start, f.ideal_end, {5}}, &n);
  EXPECT_EQ(n, 7u);  // 4 real + 3 ideal (row 0 of step 5 has no ideal)
  const auto doc = write({&f.trace, &f.meta, real_start, real_end, {}, {}, {5}});
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);  // the step's window starts at its first op
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.5e6);
  }
}

}  // namespace
}  // namespace sp::whatif
