// UnitScenarios (one scenario per unit of ranks through the shared groups) against one full
// replay per unit, on random step graphs: ranks with chains of compute and communication
// nodes, extra dependencies inside a rank, groups over random sets of ranks (several members of
// one unit in a group, groups inside one unit, groups spanning units), random partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "replay/replay_plan.h"
#include "replay/scenario_replay.h"
#include "replay/scenario_values.h"
#include "replay/unit_scenarios.h"

namespace sp::online {
namespace {

struct RandomStep {
  StepModel model;
  NodeValues values;
};

int add_node(StepModel* m, int rank, NodeRole role, std::vector<int> deps) {
  Node n;
  n.rank = rank;
  n.role = role;
  n.deps = std::move(deps);
  m->nodes.push_back(std::move(n));
  return static_cast<int>(m->nodes.size()) - 1;
}

// Groups are joined in increasing id on every rank, so the graph has no cycle.
RandomStep random_step(std::mt19937& rng, int world, int groups) {
  RandomStep out;
  StepModel& m = out.model;
  m.world = world;
  m.starts.resize(static_cast<size_t>(world));
  m.markers.resize(static_cast<size_t>(world));
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<std::vector<int>> members(static_cast<size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    for (int r = 0; r < world; ++r) {
      if (u01(rng) < 0.5) members[static_cast<size_t>(g)].push_back(r);
    }
  }
  for (int r = 0; r < world; ++r) {
    std::vector<int> chain{add_node(&m, r, NodeRole::kStart, {})};
    m.starts[static_cast<size_t>(r)] = chain.back();
    for (int g = 0; g < groups; ++g) {
      const auto& mem = members[static_cast<size_t>(g)];
      const int computes = static_cast<int>(u01(rng) * 3);
      for (int k = 0; k < computes; ++k) {
        std::vector<int> deps{chain.back()};
        if (u01(rng) < 0.3) deps.push_back(chain[static_cast<size_t>(u01(rng) * static_cast<double>(chain.size()))]);
        chain.push_back(add_node(&m, r, NodeRole::kCompute, deps));
      }
      if (std::find(mem.begin(), mem.end(), r) == mem.end()) continue;
      // Most members hang off the chain; some continue it (a blocking collective).
      const int node = add_node(&m, r, NodeRole::kComm, {chain.back()});
      m.nodes[static_cast<size_t>(node)].group = g;
      if (u01(rng) < 0.5) chain.push_back(node);
    }
    std::vector<int> marker_deps{chain.back()};
    for (size_t v = static_cast<size_t>(m.starts[static_cast<size_t>(r)]); v < m.nodes.size(); ++v) {
      if (m.nodes[v].role == NodeRole::kComm && u01(rng) < 0.5) marker_deps.push_back(static_cast<int>(v));
    }
    m.markers[static_cast<size_t>(r)] = add_node(&m, r, NodeRole::kMarker, marker_deps);
  }
  for (int g = 0; g < groups; ++g) {
    std::vector<int> nodes;
    for (size_t v = 0; v < m.nodes.size(); ++v) {
      if (m.nodes[v].group == g) nodes.push_back(static_cast<int>(v));
    }
    m.groups.push_back(nodes);
  }
  for (Node& n : m.nodes) {
    if (n.role == NodeRole::kComm && m.groups[static_cast<size_t>(n.group)].empty()) n.group = -1;
  }
  NodeValues& v = out.values;
  for (const Node& n : m.nodes) {
    const bool start = n.role == NodeRole::kStart;
    v.real_work.push_back(start ? 0.0 : u01(rng));
    v.ideal_work.push_back(start ? 0.0 : u01(rng));
    v.real_delay.push_back(u01(rng) * 0.1);
    v.ideal_delay.push_back(start ? v.real_delay.back() : u01(rng) * 0.1);
  }
  return out;
}

TEST(OnlineUnitScenarios, BoundaryMethodGivesEveryUnitTheStepTimeOfItsFullReplay) {
  std::mt19937 rng(7);
  int checked = 0, with_shared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int world = 2 + trial % 9;
    RandomStep step = random_step(rng, world, 1 + trial % 6);
    const int units = 1 + static_cast<int>(rng() % static_cast<unsigned>(world));
    std::vector<int32_t> unit_of_rank(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) unit_of_rank[static_cast<size_t>(r)] = r < units ? r : static_cast<int32_t>(rng() % static_cast<unsigned>(units));
    ReplayPlan plan;
    build_replay_plan(step.model, &plan);
    PlanValues values;
    gather_plan_values(step.model, step.values, plan, &values);
    const ValueSide base{trial % 2 == 0, DelayMode::kIdeal}, alt{trial % 2 != 0, DelayMode::kReal};
    LaneBatch batch;
    UnitScenarios boundary(&batch), full(&batch);
    std::vector<double> fast, slow;
    boundary.run(plan, values, unit_of_rank, units, base, alt, UnitMethod::kBoundary, &fast);
    full.run(plan, values, unit_of_rank, units, base, alt, UnitMethod::kFullReplays, &slow);
    ASSERT_TRUE(boundary.stats().boundary);
    ASSERT_FALSE(full.stats().boundary);
    with_shared += boundary.stats().shared_groups > 0;
    ASSERT_EQ(fast.size(), slow.size());
    for (size_t u = 0; u < fast.size(); ++u) {
      EXPECT_NEAR(fast[u], slow[u], 1e-12 * std::max(1.0, slow[u]))
          << "trial " << trial << " unit " << u << " of " << units;
      ++checked;
    }
  }
  EXPECT_GT(checked, 600);
  EXPECT_GT(with_shared, 200);  // most trials exercise groups shared between units
}

TEST(OnlineUnitScenarios, FullReplayOfOneUnitMatchesTheSingleLaneReplay) {
  std::mt19937 rng(11);
  RandomStep step = random_step(rng, 6, 4);
  ReplayPlan plan;
  build_replay_plan(step.model, &plan);
  PlanValues values;
  gather_plan_values(step.model, step.values, plan, &values);
  const std::vector<int32_t> unit_of_rank{0, 0, 1, 1, 2, 2};
  LaneBatch batch;
  UnitScenarios full(&batch);
  std::vector<double> times;
  full.run(plan, values, unit_of_rank, 3, {false, DelayMode::kIdeal}, {true, DelayMode::kReal},
           UnitMethod::kFullReplays, &times);
  for (int32_t u = 0; u < 3; ++u) {
    Selection s;
    s.reset(values.num_types, 6, false, DelayMode::kIdeal);
    for (size_t r = 0; r < 6; ++r) {
      if (unit_of_rank[r] != u) continue;
      s.rank_real[r] = 1;
      s.rank_delay[r] = static_cast<uint8_t>(DelayMode::kReal);
    }
    ScenarioReplay replay;
    EXPECT_EQ(times[static_cast<size_t>(u)], replay.run(plan, values, s)) << "unit " << u;
  }
}

}  // namespace
}  // namespace sp::online
