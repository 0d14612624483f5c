// Configuration: defaults, precedence (explicit > environment > default), and one clear error
// naming the variable for every bad value.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <ostream>
#include <string>

#include "config/env_config.h"

namespace sp::runtime {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(EnvConfig, DefaultsWithoutEnvironmentOrConfig) {
  const ConfigResult r = resolve_config(nullptr, env_of({}));
  ASSERT_TRUE(r.config) << r.error;
  const RuntimeConfig& c = *r.config;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.world_size, 1);
  EXPECT_EQ(c.ring_capacity, 65536u);
  EXPECT_EQ(c.max_threads, 64u);
  EXPECT_EQ(c.queue_steps, 16u);
  EXPECT_EQ(c.step_grace_ms, 50u);
  EXPECT_EQ(c.drain_interval_ms, 5u);
  EXPECT_EQ(c.max_events_per_step, 262144u);
  EXPECT_EQ(c.log_level, log::Level::kWarn);
}

TEST(EnvConfig, EnvironmentIsReadAndRingCapacityRoundsUpToAPowerOfTwo) {
  const ConfigResult r = resolve_config(
      nullptr, env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                       {"STRAGGLER_PROBE_RING_CAPACITY", "1000"},
                       {"STRAGGLER_PROBE_MAX_THREADS", "8"},
                       {"STRAGGLER_PROBE_QUEUE_STEPS", "2"},
                       {"STRAGGLER_PROBE_STEP_GRACE_MS", "0"},
                       {"STRAGGLER_PROBE_DRAIN_INTERVAL_MS", "1"},
                       {"STRAGGLER_PROBE_MAX_EVENTS_PER_STEP", "2048"},
                       {"STRAGGLER_PROBE_LOG_LEVEL", "DEBUG"},
                       {"STRAGGLER_PROBE_ENABLE", "off"}}));
  ASSERT_TRUE(r.config) << r.error;
  const RuntimeConfig& c = *r.config;
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.world_size, 4);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.ring_capacity, 1024u);
  EXPECT_EQ(c.max_threads, 8u);
  EXPECT_EQ(c.queue_steps, 2u);
  EXPECT_EQ(c.step_grace_ms, 0u);
  EXPECT_EQ(c.drain_interval_ms, 1u);
  EXPECT_EQ(c.max_events_per_step, 2048u);
  EXPECT_EQ(c.log_level, log::Level::kDebug);
}

TEST(EnvConfig, ExplicitFieldsWinOverTheEnvironment) {
  sp_config cfg{};
  cfg.struct_size = sizeof(cfg);
  cfg.rank = 1;
  cfg.world_size = 2;
  cfg.local_rank = -1;  // from the environment
  cfg.ring_capacity = 128;
  cfg.queue_steps = 5;
  const ConfigResult r = resolve_config(
      &cfg, env_of({{"RANK", "0"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "6"},
                    {"STRAGGLER_PROBE_RING_CAPACITY", "4096"}, {"STRAGGLER_PROBE_QUEUE_STEPS", "9"},
                    {"STRAGGLER_PROBE_MAX_THREADS", "3"}}));
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->rank, 1);
  EXPECT_EQ(r.config->world_size, 2);
  EXPECT_EQ(r.config->local_rank, 6);
  EXPECT_EQ(r.config->ring_capacity, 128u);
  EXPECT_EQ(r.config->queue_steps, 5u);
  EXPECT_EQ(r.config->max_threads, 3u);
}

TEST(EnvConfig, FieldsBeyondAnOlderStructSizeAreIgnored) {
  sp_config cfg{};
  cfg.struct_size = offsetof(sp_config, queue_steps);  // a first-ABI caller
  cfg.rank = -1;
  cfg.world_size = -1;
  cfg.local_rank = -1;
  cfg.queue_steps = 4000;  // garbage from the caller's point of view
  const ConfigResult r = resolve_config(&cfg, env_of({}));
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->queue_steps, 16u);
}

struct BadValue {
  const char* var;
  const char* value;
  const char* expected;  // substring of the error
};

// Stable, readable test names (ctest shows the printed parameter): VAR_value, other characters
// as '_'.
void PrintTo(const BadValue& b, std::ostream* os) {
  std::string name = std::string(b.var) + "_" + b.value;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  *os << name;
}

class EnvConfigBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(EnvConfigBadValue, IsOneErrorNamingTheVariableAndValue) {
  const BadValue& b = GetParam();
  const ConfigResult r = resolve_config(nullptr, env_of({{b.var, b.value}}));
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find(std::string(b.var) + "='" + b.value + "'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(b.expected), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    AllVariables, EnvConfigBadValue,
    ::testing::Values(
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "abc", "[64, 16777216]"},
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "0", "[64, 16777216]"},
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "99999999999", "[64, 16777216]"},
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "-5", "not an integer"},
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "4096 ", "not an integer"},
        BadValue{"STRAGGLER_PROBE_RING_CAPACITY", "", "not an integer"},
        BadValue{"STRAGGLER_PROBE_MAX_THREADS", "0", "[1, 1024]"},
        BadValue{"STRAGGLER_PROBE_MAX_THREADS", "5000", "[1, 1024]"},
        BadValue{"STRAGGLER_PROBE_QUEUE_STEPS", "0", "[1, 4096]"},
        BadValue{"STRAGGLER_PROBE_STEP_GRACE_MS", "1e3", "[0, 600000]"},
        BadValue{"STRAGGLER_PROBE_DRAIN_INTERVAL_MS", "0", "[1, 1000]"},
        BadValue{"STRAGGLER_PROBE_MAX_EVENTS_PER_STEP", "10", "[1024, 16777216]"},
        BadValue{"STRAGGLER_PROBE_ENABLE", "maybe", "not 0 or 1"},
        BadValue{"STRAGGLER_PROBE_LOG_LEVEL", "verbose", "trace, debug, info"},
        BadValue{"STRAGGLER_PROBE_VERBOSE", "yes", "must be 0 or 1"},
        BadValue{"RANK", "x", "not an integer"},
        BadValue{"WORLD_SIZE", "0", "[1, 16777216]"},
        BadValue{"LOCAL_RANK", "-1", "not an integer"}));

// STRAGGLER_PROBE_VERBOSE=1, the GPU layers' former switch, is an alias of LOG_LEVEL=info;
// LOG_LEVEL wins when both are set.
TEST(EnvConfig, VerboseIsAnAliasOfLogLevelInfo) {
  const ConfigResult verbose = resolve_config(nullptr, env_of({{"STRAGGLER_PROBE_VERBOSE", "1"}}));
  ASSERT_TRUE(verbose.config) << verbose.error;
  EXPECT_EQ(verbose.config->log_level, log::Level::kInfo);
  const ConfigResult both = resolve_config(
      nullptr, env_of({{"STRAGGLER_PROBE_VERBOSE", "1"}, {"STRAGGLER_PROBE_LOG_LEVEL", "error"}}));
  ASSERT_TRUE(both.config) << both.error;
  EXPECT_EQ(both.config->log_level, log::Level::kError);
}

TEST(EnvConfig, RankMustBeBelowWorldSize) {
  const ConfigResult r = resolve_config(nullptr, env_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}));
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("RANK='4' is not an integer in [0, 3]"), std::string::npos) << r.error;
}

TEST(EnvConfig, BadExplicitFieldIsNamed) {
  sp_config cfg{};
  cfg.struct_size = sizeof(cfg);
  cfg.rank = -1;
  cfg.world_size = -1;
  cfg.local_rank = -1;
  cfg.max_threads = 100000;
  const ConfigResult r = resolve_config(&cfg, env_of({}));
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("sp_config.max_threads=100000"), std::string::npos) << r.error;
}

TEST(EnvConfig, TooSmallStructIsAnError) {
  sp_config cfg{};
  cfg.struct_size = 4;
  const ConfigResult r = resolve_config(&cfg, env_of({}));
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("struct_size"), std::string::npos);
}

TEST(EnvConfig, RoundUpPow2) {
  EXPECT_EQ(round_up_pow2(1), 1u);
  EXPECT_EQ(round_up_pow2(64), 64u);
  EXPECT_EQ(round_up_pow2(65), 128u);
  EXPECT_EQ(round_up_pow2(1u << 24), 1u << 24);
}

}  // namespace
}  // namespace sp::runtime
