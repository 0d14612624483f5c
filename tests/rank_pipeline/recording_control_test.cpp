// /control's pause and resume on their way to every rank (transport.h's RecordingNotice): the
// ctl value that carries them (old values still parse), the host socket's kRecording frame
// (decoded strictly), and a job of 8 ranks on 2 hosts whose every rank applies rank 0's pause
// and then its resume, each once.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <string>

#include "host/host_keys.h"
#include "simulated_job.h"

namespace sp::rank_pipeline::testing {
namespace {

TEST(RecordingControl, TheNoticeRidesOnCtlAfterTheAckAndTheHangAsk) {
  const host::Control old_plain = host::parse_control("12");
  EXPECT_EQ(old_plain.ack, 12);
  EXPECT_FALSE(old_plain.recording);
  const host::Control old_hang = host::parse_control("12 hang 3 5");
  EXPECT_EQ(old_hang.ack, 12);
  ASSERT_TRUE(old_hang.ask);
  EXPECT_FALSE(old_hang.recording);

  const RecordingNotice pause{4, true};
  const host::Control both =
      host::parse_control(host::control_value(12, host::HangAsk{3, 5}, pause));
  EXPECT_EQ(host::control_value(12, host::HangAsk{3, 5}, pause), "12 hang 3 5 rec 4 1");
  EXPECT_EQ(both.ack, 12);
  ASSERT_TRUE(both.ask);
  EXPECT_EQ(both.ask->round, 5u);
  ASSERT_TRUE(both.recording);
  EXPECT_EQ(both.recording->generation, 4u);
  EXPECT_TRUE(both.recording->paused);
  const host::Control resumed = host::parse_control(host::control_value(13, std::nullopt, {{5, false}}));
  EXPECT_EQ(resumed.ack, 13);
  ASSERT_TRUE(resumed.recording);
  EXPECT_FALSE(resumed.recording->paused);
  EXPECT_EQ(host::control_value(13, std::nullopt, RecordingNotice{}), "13");  // none yet: as before

  for (const char* bad : {"12 rec 0 1", "12 rec 4 2", "12 rec x 1", "12 rec 4 1 9",
                          "12 rec -4 1", "12 rec 4"}) {
    const host::Control c = host::parse_control(bad);
    EXPECT_FALSE(c.recording) << bad;
    EXPECT_EQ(c.ack, 12) << bad;  // the ack is still read
  }
  EXPECT_TRUE(host::parse_control("stop rank 3 rec 4 1").stop);
}

TEST(RecordingControl, TheFrameIsDecodedStrictly) {
  const std::string payload = host::recording_frame({7, true});
  EXPECT_EQ(payload.size(), 9u);
  const auto n = host::parse_recording_frame(payload);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->generation, 7u);
  EXPECT_TRUE(n->paused);
  EXPECT_FALSE(host::parse_recording_frame(payload.substr(0, 8)));
  EXPECT_FALSE(host::parse_recording_frame(payload + "x"));
  EXPECT_FALSE(host::parse_recording_frame(host::recording_frame({0, true})));
  std::string two = payload;
  two[8] = 2;
  EXPECT_FALSE(host::parse_recording_frame(two));
}

TEST(RecordingControl, TheSwitchMakesAGenerationPerChange) {
  RecordingSwitch s;
  EXPECT_EQ(s.current().generation, 0u);
  s.ask(true);
  s.ask(true);  // no change: no new notice
  EXPECT_EQ(s.current().generation, 1u);
  s.ask(false);
  EXPECT_EQ(s.current().generation, 2u);
  EXPECT_FALSE(s.current().paused);
}

TEST(RecordingControl, EveryRankOnEveryHostTakesPauseThenResumeOnce) {
  constexpr int kWorld = 8;
  TransportOptions o;
  o.prefix = "test/";
  o.max_lag = 8;  // the default: the leaders read ctl every 2 posts (host_leader.cpp)
  o.poll = 1ms;
  o.max_poll = 10ms;
  o.connect_timeout = 2s;
  SimulatedJob job(kWorld, 4, o);
  auto sw = std::make_shared<RecordingSwitch>();
  job.options(0).recording_switch = sw;
  std::array<std::atomic<int>, kWorld> state{};    // 1 paused, 2 resumed
  std::array<std::atomic<int>, kWorld> changes{};  // notices applied
  for (int r = 0; r < kWorld; ++r) {
    job.options(r).set_recording_paused = [&state, &changes, r](bool paused) {
      state[static_cast<size_t>(r)] = paused ? 1 : 2;
      changes[static_cast<size_t>(r)]++;
    };
  }
  job.start();
  int64_t step = 0;
  // Steps keep coming, each collected by rank 0 before the next (the leaders read ctl as they
  // post): returns the steps until every rank is in `want`, however slow the machine.
  auto steps_until_all = [&](int want) {
    for (int n = 1; n <= 200; ++n) {
      job.push(step++);
      if (!job.wait_for_batches(static_cast<size_t>(step), 20s)) return -1;
      std::this_thread::sleep_for(20ms);  // a member takes its leader's frame at its next pass
      bool all = true;
      for (auto& s : state) all = all && s.load() == want;
      if (all) return n;
    }
    return -1;
  };
  for (int i = 0; i < 3; ++i) job.push(step++);
  ASSERT_TRUE(job.wait_for_batches(3, 10s));
  sw->ask(true);
  const int to_pause = steps_until_all(1);
  sw->ask(false);
  const int to_resume = steps_until_all(2);
  std::printf("recording control: every rank paused after %d step(s), resumed after %d\n",
              to_pause, to_resume);
  EXPECT_GT(to_pause, 0);
  EXPECT_GT(to_resume, 0);
  // A leader reads ctl at least every 2 posts: the other host has it within 2 posted steps, its
  // members a frame later.
  EXPECT_LE(to_pause, 3);
  EXPECT_LE(to_resume, 3);
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(changes[static_cast<size_t>(r)].load(), 2) << r;
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(job.rank(r).counters->bad_recording_frames.load(), 0u);
  job.stop(2s);
}

}  // namespace
}  // namespace sp::rank_pipeline::testing
