// The op model's tables of op types, ideal keys and delay keys: each name once, indices given
// in the order ops are read (so that they do not depend on how the builder looks names up),
// and each delay key the op's ideal key with its ordinal among the rank's ops of that key.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/step_model_builder.h"
#include "summary_builders.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

StepModel build_job(testing::Schedule schedule, int pp) {
  testing::SyntheticJob job;
  job.dp = 4;
  job.pp = pp;
  job.microbatches = 4;
  job.schedule = schedule;
  job.seq_lens = true;
  job.jitter = 0.02;
  job.gc.push_back({0, 1, 0.003});
  const testing::SyntheticRun run = testing::run_synthetic(job, 1);
  std::string error;
  auto m = build_step_model(testing::summary_ptrs(run.steps[0]), ModelOptions{}, &error);
  EXPECT_TRUE(m.has_value()) << error;
  return m ? std::move(*m) : StepModel{};
}

void expect_unique(const std::vector<std::string>& table, const char* what) {
  EXPECT_EQ(std::set<std::string>(table.begin(), table.end()).size(), table.size()) << what;
}

// Index i appears only after 0..i-1 have: first-appearance order.
void expect_first_appearance(const StepModel& m, int LogicalOp::*field, size_t table_size,
                             const char* what) {
  int next = 0;
  for (const LogicalOp& op : m.ops) {
    ASSERT_LE(op.*field, next) << what;
    if (op.*field == next) ++next;
  }
  EXPECT_LE(static_cast<size_t>(next), table_size) << what;
}

class OpKeys : public ::testing::TestWithParam<std::pair<testing::Schedule, int>> {};

TEST_P(OpKeys, EachNameOnceInTheOrderOpsAreRead) {
  const StepModel m = build_job(GetParam().first, GetParam().second);
  ASSERT_FALSE(m.ops.empty());
  expect_unique(m.type_names, "type names");
  expect_unique(m.ideal_keys, "ideal keys");
  expect_unique(m.delay_keys, "delay keys");
  expect_first_appearance(m, &LogicalOp::type, m.type_names.size(), "type");
  expect_first_appearance(m, &LogicalOp::key, m.ideal_keys.size(), "key");
  expect_first_appearance(m, &LogicalOp::delay_key, m.delay_keys.size(), "delay key");
  EXPECT_EQ(m.marker_delay_key, static_cast<int>(m.delay_keys.size()) - 1);
  EXPECT_EQ(m.delay_keys.back(), "step-end");
}

TEST_P(OpKeys, KeysNameTheirTypeAndDelayKeysTheirOrdinal) {
  const StepModel m = build_job(GetParam().first, GetParam().second);
  std::map<std::pair<int, int>, int> seen;  // (rank, key) -> ops so far
  for (const LogicalOp& op : m.ops) {
    const std::string& type = m.type_names[static_cast<size_t>(op.type)];
    const std::string& key = m.ideal_keys[static_cast<size_t>(op.key)];
    EXPECT_EQ(key.compare(0, type.size(), type), 0) << key << " of type " << type;
    const int ordinal = seen[{op.rank, op.key}]++;
    EXPECT_EQ(m.delay_keys[static_cast<size_t>(op.delay_key)], key + "@" + std::to_string(ordinal));
  }
}

TEST_P(OpKeys, SameSummariesSameTables) {
  const StepModel a = build_job(GetParam().first, GetParam().second);
  const StepModel b = build_job(GetParam().first, GetParam().second);
  EXPECT_EQ(a.type_names, b.type_names);
  EXPECT_EQ(a.ideal_keys, b.ideal_keys);
  EXPECT_EQ(a.delay_keys, b.delay_keys);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].logical, b.nodes[i].logical);
    EXPECT_EQ(a.nodes[i].deps, b.nodes[i].deps);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, OpKeys,
                         ::testing::Values(std::make_pair(testing::Schedule::kGPipe, 1),
                                           std::make_pair(testing::Schedule::kGPipe, 4),
                                           std::make_pair(testing::Schedule::k1F1B, 4)));

}  // namespace
}  // namespace sp::online
