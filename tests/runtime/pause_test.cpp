// sp_set_recording_paused: reversible, unlike stepping aside. The change waits for the next step
// mark; a paused step's summary has no events and the paused annotation (so that rank 0 skips it
// instead of waiting for it); hooks return SP_ERR_PAUSED at once; resume records again.
#include <gtest/gtest.h>

#include "probe_test_util.h"

namespace sp::runtime::testing {
namespace {

using namespace std::chrono_literals;

class Pause : public ::testing::Test {
 protected:
  void TearDown() override {
    sp_set_recording_paused(0);
    sp_shutdown();
    pop_all();
  }
};

sp_event cpu_event(uint64_t start) {
  sp_event ev{};
  ev.kind = SP_OP_OTHER;
  ev.start_ns = start;
  ev.end_ns = start + 10;
  ev.microbatch = -1;
  ev.peer = -1;
  ev.time_source = SP_TIME_CPU;
  return ev;
}

sp_pause_state pause_state() {
  sp_pause_state s{};
  EXPECT_EQ(sp_get_pause_state(&s), SP_OK);
  return s;
}

TEST_F(Pause, TakesEffectAtTheNextMarkAndResumeRecordsAgain) {
  const sp_config cfg = test_config();
  ASSERT_EQ(sp_init(&cfg), SP_OK) << sp_last_warning();
  const sp_event before = cpu_event(sp_now_ns());
  ASSERT_EQ(sp_record(&before), SP_OK);
  ASSERT_EQ(sp_set_recording_paused(1), SP_OK);
  EXPECT_EQ(pause_state().wanted, 1);
  EXPECT_EQ(pause_state().paused, 0);  // not before the step boundary
  const sp_event in_step0 = cpu_event(sp_now_ns());
  EXPECT_EQ(sp_record(&in_step0), SP_OK);
  ASSERT_EQ(sp_mark_step(0), SP_OK);  // step 0 recorded whole; paused from here
  EXPECT_EQ(pause_state().paused, 1);
  const sp_event in_step1 = cpu_event(sp_now_ns());
  EXPECT_EQ(sp_record(&in_step1), SP_ERR_PAUSED);
  EXPECT_EQ(sp_region_begin(SP_OP_FORWARD, 0, 0), 0u);
  ASSERT_EQ(sp_mark_step(1), SP_OK);
  ASSERT_EQ(sp_set_recording_paused(0), SP_OK);
  EXPECT_EQ(sp_record(&in_step1), SP_ERR_PAUSED);  // still step 2's boundary away
  ASSERT_EQ(sp_mark_step(2), SP_OK);  // step 2 paused too; recording from here
  const sp_event in_step3 = cpu_event(sp_now_ns());
  EXPECT_EQ(sp_record(&in_step3), SP_OK);
  ASSERT_EQ(sp_mark_step(3), SP_OK);
  const sp_pause_state st = pause_state();
  EXPECT_EQ(st.paused, 0);
  EXPECT_EQ(st.pauses, 1u);
  EXPECT_EQ(st.steps_paused, 2u);
  ASSERT_EQ(sp_flush(), SP_OK);

  std::vector<StepSummary> got;
  StepSummary s;
  while (got.size() < 4 && pop_summary(&s, 5000ms) == PopStatus::kOk) got.push_back(s);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].ops.size(), 2u);
  EXPECT_FALSE(recorded_while_paused(got[0]));
  for (int i : {1, 2}) {
    EXPECT_TRUE(recorded_while_paused(got[static_cast<size_t>(i)])) << i;
    EXPECT_TRUE(got[static_cast<size_t>(i)].ops.empty()) << i;
  }
  EXPECT_EQ(got[3].ops.size(), 1u);
  EXPECT_FALSE(recorded_while_paused(got[3]));
  // Encoded and decoded (the way it reaches rank 0), the annotation is still there.
  StepSummary decoded;
  std::string error;
  ASSERT_TRUE(decode_summary(encode_summary(got[1]), &decoded, &error)) << error;
  EXPECT_TRUE(recorded_while_paused(decoded));
}

TEST_F(Pause, BeforeInitItIsRefusedAndNothingChanges) {
  sp_pause_state s{};
  EXPECT_EQ(sp_get_pause_state(nullptr), SP_ERR_INVALID);
  EXPECT_EQ(sp_get_pause_state(&s), sp_get_pause_state(&s));  // no crash either way
}

}  // namespace
}  // namespace sp::runtime::testing
