// The rank pipeline reaches the runtime only through the calls it is given (runtime_calls.h):
// started on the runtime linked into this test, a one-rank job's steps recorded through the C ABI
// reach rank 0's analysis; a runtime without a required call is refused before any thread starts.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "straggler_probe/probe.h"
#include "straggler_probe/rank_pipeline/rank_pipeline.h"
#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {
namespace {

using namespace std::chrono_literals;

constexpr int kSteps = 6;

PipelineSettings one_rank() {
  PipelineSettings s;
  s.rank = 0;
  s.world_size = 1;
  s.prefix = "straggler_probe/linked-runtime-test/";
  s.warmup_steps = 0;
  s.log_lines = false;
  s.clock_sync = false;
  return s;
}

// One forward of a millisecond per step, marked back to back.
void record_steps() {
  for (int step = 0; step < kSteps; ++step) {
    const uint64_t t = sp_now_ns();
    sp_event ev{};
    ev.start_ns = t;
    ev.end_ns = t + 1'000'000;
    ev.kind = SP_OP_FORWARD;
    ev.microbatch = 0;
    ev.peer = -1;
    ev.name_id = sp_intern("forward");
    ASSERT_EQ(sp_record(&ev), SP_OK);
    ASSERT_EQ(sp_mark_step(step + 1), SP_OK);
  }
}

TEST(LinkedRuntime, StepsRecordedThroughTheCAbiReachRankZerosAnalysis) {
  sp_config cfg;
  sp_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  ASSERT_EQ(sp_init(&cfg), SP_OK) << sp_last_warning();
  RankPipeline pipeline(one_rank(), nullptr, linked_runtime_calls());
  record_steps();
  ASSERT_EQ(sp_shutdown(), SP_OK);  // closes every marked step; the queue drains, then closes
  pipeline.stop(5s);
  EXPECT_EQ(pipeline.state(), RankPipelineState::kStopped) << pipeline.message();
  const auto stats = pipeline.stats();
  EXPECT_EQ(stats.at("steps_complete"), kSteps);
  EXPECT_EQ(stats.at("steps_analyzed"), kSteps);
}

TEST(LinkedRuntime, ARuntimeWithoutARequiredCallIsRefused) {
  RuntimeCalls calls = linked_runtime_calls();
  EXPECT_STREQ(missing_runtime_call(calls), "");
  calls.pop_summary = nullptr;
  EXPECT_STREQ(missing_runtime_call(calls), "sp_pop_summary");
  try {
    RankPipeline pipeline(one_rank(), nullptr, calls);
    FAIL() << "started without sp_pop_summary";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "the rank pipeline was given a runtime without sp_pop_summary");
  }
}

TEST(LinkedRuntime, TheLinkedCoreHasNoGpuCapture) {
  const RuntimeCalls calls = linked_runtime_calls();
  EXPECT_EQ(calls.cupti_get_stats, nullptr);
  EXPECT_EQ(calls.cupti_report, nullptr);
  EXPECT_NE(calls.get_heartbeat, nullptr);
}

}  // namespace
}  // namespace sp::rank_pipeline
