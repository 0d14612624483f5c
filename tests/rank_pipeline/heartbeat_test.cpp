// Heartbeats (rank_pipeline/src/hang/heartbeat.h) and rank 0's picture of the job from them
// (hang_view.h, hang_line.h), without threads: the wire formats round-trip and refuse bytes that
// are not theirs without echoing them; silence, staleness and lateness are told apart; the line
// names what it must. Also the runtime's own heartbeat (sp_get_heartbeat) as its consumer
// publishes it.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "hang/hang_line.h"
#include "hang/hang_view.h"
#include "hang/heartbeat.h"
#include "host/host_keys.h"
#include "straggler_probe/probe.h"

namespace sp::rank_pipeline {
namespace {

using namespace std::chrono_literals;

Heartbeat beat(int64_t step, int64_t mark_age, uint64_t events, const char* name = "",
               uint32_t kind = SP_OP_FORWARD, int64_t event_age = 100) {
  Heartbeat hb;
  hb.last_marked_step = step;
  hb.mark_age_ms = mark_age;
  hb.has_event = true;
  hb.kind = kind;
  hb.microbatch = 0;
  hb.event_step = step + 1;
  hb.event_age_ms = event_age;
  hb.events_in_step = events;
  hb.name = name;
  return hb;
}

TEST(HeartbeatWire, FramesAndHostAggregatesRoundTrip) {
  const Heartbeat hb = beat(41, 1234, 3, "ddp-bucket-all-reduce", SP_OP_COLLECTIVE);
  int rank = -1;
  Heartbeat back;
  std::string error;
  ASSERT_TRUE(decode_heartbeat_frame(encode_heartbeat_frame(5, hb), 8, &rank, &back, &error)) << error;
  EXPECT_EQ(rank, 5);
  EXPECT_EQ(back.last_marked_step, 41);
  EXPECT_EQ(back.mark_age_ms, 1234);
  EXPECT_EQ(back.name, "ddp-bucket-all-reduce");
  EXPECT_EQ(describe_op(back), "ddp-bucket-all-reduce mb=0");

  HostBeats b;
  b.leader = 4;
  b.round = 7;
  b.ranks.push_back(RankBeat{4, true, 0, hb});
  b.ranks.push_back(RankBeat{5, false, 0, Heartbeat{}});
  std::string bytes;
  append_host_beats(b, &bytes);
  append_host_beats(b, &bytes);  // appended by two leaders into one key
  std::vector<HostBeats> parsed;
  ASSERT_TRUE(parse_host_beats(bytes, 8, &parsed, &error)) << error;
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[1].round, 7u);
  EXPECT_EQ(parsed[1].ranks[0].hb.events_in_step, 3u);
  EXPECT_FALSE(parsed[1].ranks[1].heard);
}

TEST(HeartbeatWire, BytesThatAreNotAHeartbeatAreRefusedAndNeverEchoed) {
  int rank = -1;
  Heartbeat back;
  std::string error;
  // A name with an escape sequence: refused, and the error does not carry it.
  Heartbeat evil = beat(1, 1, 1);
  evil.name = "\x1b[31mEVIL";
  EXPECT_FALSE(decode_heartbeat_frame(encode_heartbeat_frame(1, evil), 8, &rank, &back, &error));
  EXPECT_EQ(error.find("EVIL"), std::string::npos) << error;
  EXPECT_TRUE(back.name.empty());
  // A rank outside the world, trailing bytes, truncation, an unknown op kind.
  EXPECT_FALSE(decode_heartbeat_frame(encode_heartbeat_frame(9, beat(1, 1, 1)), 8, &rank, &back, &error));
  EXPECT_FALSE(decode_heartbeat_frame(encode_heartbeat_frame(1, beat(1, 1, 1)) + "x", 8, &rank, &back, &error));
  const std::string whole = encode_heartbeat_frame(1, beat(1, 1, 1));
  for (size_t n = 0; n < whole.size(); ++n) {
    EXPECT_FALSE(decode_heartbeat_frame(whole.substr(0, n), 8, &rank, &back, &error)) << n;
  }
  EXPECT_FALSE(decode_heartbeat_frame(encode_heartbeat_frame(1, beat(1, 1, 1, "", 99)), 8, &rank, &back, &error));
  // An aggregate naming a rank outside the world, or cut short.
  HostBeats b;
  b.leader = 0;
  b.ranks.push_back(RankBeat{12, true, 0, beat(1, 1, 1)});
  std::string bytes;
  append_host_beats(b, &bytes);
  std::vector<HostBeats> parsed;
  EXPECT_FALSE(parse_host_beats(bytes, 8, &parsed, &error));
  EXPECT_FALSE(parse_host_beats(bytes.substr(0, bytes.size() - 1), 16, &parsed, &error));
}

TEST(HeartbeatWire, TheAskRidesOnTheControlKeyWithTheAck) {
  const host::Control plain = host::parse_control("12");
  EXPECT_EQ(plain.ack, 12);
  EXPECT_FALSE(plain.ask);
  const host::Control asked = host::parse_control(host::control_value(12, host::HangAsk{3, 5}));
  EXPECT_EQ(asked.ack, 12);
  ASSERT_TRUE(asked.ask);
  EXPECT_EQ(asked.ask->episode, 3u);
  EXPECT_EQ(asked.ask->round, 5u);
  EXPECT_FALSE(host::parse_control("12 hang x 5").ask);
  EXPECT_TRUE(host::parse_control("stop rank 3: boom").stop);
}

// A host of 4: leader 0 (this rank), members 1-3. Rank 2 fell silent 9 s ago.
ViewInput one_host(HangClock::time_point now) {
  ViewInput in;
  in.world_size = 4;
  in.now = now;
  in.own = beat(11, 9500, 2);
  HostBeats b;
  b.leader = 0;
  b.ranks.push_back(RankBeat{0, true, 0, beat(11, 9500, 2)});
  b.ranks.push_back(RankBeat{1, true, 300, beat(11, 9400, 2)});
  b.ranks.push_back(RankBeat{2, true, 9000, beat(11, 9600, 1, "", SP_OP_BACKWARD, 9100)});
  b.ranks.push_back(RankBeat{3, true, 200, beat(11, 9450, 2)});
  in.hosts.push_back(TimedHostBeats{b, now, 2000ms});
  return in;
}

std::vector<RankInfo> table_of(int n) {
  std::vector<RankInfo> t;
  for (int r = 0; r < n; ++r) t.push_back(rank_row(r, 0, r, r, "vm"));
  return t;
}

TEST(HangView, ASilentRankIsNamedAndTheOthersWait) {
  const auto now = HangClock::now();
  const JobView v = build_view(one_host(now));
  EXPECT_EQ(v.silent, std::vector<int>{2});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(v.behind.empty());
  EXPECT_EQ(v.incomplete_step, 12);
  EXPECT_EQ(v.stalled_ms, 9600);
  EXPECT_FALSE(v.busy);
  const std::string line = hang_line(HangLineKind::kSuspected, v, table_of(4), 12, 9.6, 3.0);
  EXPECT_EQ(line.rfind("straggler_probe hang suspected step=12 silent=rank:2 host=vm gpu=2 "
                       "last=backward mb=0 step=12 9.1s ago; 3 ranks waiting (0,1,3) last=forward "
                       "mb=0 ", 0), 0u) << line;
  EXPECT_NE(line.find("no step for 9.6s (bound 3.0s)"), std::string::npos) << line;
  EXPECT_EQ(named_summary(v), "silent=rank:2");
}

// The step the job stopped in is the fresh ranks' (issue 26: the line said 27, the verdict 30):
// the frozen rank's last heartbeat left it half a second before it stopped, three steps earlier
// in a job of 40 ms steps, while the others went on to wait in the step it stopped in.
TEST(HangView, TheStepIsTheOneTheFreshRanksWaitInNotTheSilentRanksStaleOne) {
  const auto now = HangClock::now();
  ViewInput in = one_host(now);
  in.hosts[0].beats.ranks[2].hb = beat(8, 9720, 4, "", SP_OP_BACKWARD, 9610);
  const JobView v = build_view(in);
  EXPECT_EQ(v.silent, std::vector<int>{2});
  EXPECT_EQ(v.incomplete_step, 12);
  const std::string line = hang_line(HangLineKind::kSuspected, v, table_of(4), v.incomplete_step, 9.7, 3.0);
  // The step of the hang, and the frozen rank's own last heartbeat (how old it is says why older).
  EXPECT_EQ(line.rfind("straggler_probe hang suspected step=12 silent=rank:2 host=vm gpu=2 "
                       "last=backward mb=0 step=9 9.6s ago", 0), 0u) << line;
  // No rank fresh (a view from outside the host, whose aggregate went stale: its leader silent,
  // its members unseen): the silent ranks' lowest, as before.
  in.hosts[0].at = now - 5s;
  in.self = -1;
  const JobView none_fresh = build_view(in);
  EXPECT_EQ(none_fresh.silent, (std::vector<int>{0, 2}));
  EXPECT_EQ(none_fresh.incomplete_step, 9);
}

TEST(HangView, AStaleAggregateMakesItsLeaderSilentAndItsMembersUnseen) {
  const auto now = HangClock::now();
  ViewInput in = one_host(now);
  in.hosts[0].beats.leader = 1;
  in.hosts[0].at = now - 5s;  // the leader stopped sending 5 s ago
  in.self = 3;                // rank 3 reads its leader's aggregate
  in.own = beat(11, 14000, 2);
  const JobView v = build_view(in);
  EXPECT_EQ(v.silent, (std::vector<int>{1, 2}));  // the leader, and 2 (silent already then)
  EXPECT_EQ(v.unseen, std::vector<int>{0});
  EXPECT_EQ(v.waiting, std::vector<int>{3});
  const std::string line = hang_line(HangLineKind::kSuspected, v, table_of(4), 12, 14.0, 3.0);
  EXPECT_NE(line.find("unseen=0"), std::string::npos) << line;
}

TEST(HangView, AnAliveRankLessFarIntoTheStepIsBehind) {
  const auto now = HangClock::now();
  ViewInput in = one_host(now);
  in.hosts[0].beats.ranks[2].silent_ms = 100;  // rank 2 alive, one event into the step
  const JobView v = build_view(in);
  EXPECT_TRUE(v.silent.empty());
  EXPECT_EQ(v.behind, std::vector<int>{2});
  EXPECT_EQ(named_summary(v), "behind=rank:2");
  // Every rank alive and each finished an op a moment ago: busy (a long step), not a hang.
  for (RankBeat& rb : in.hosts[0].beats.ranks) rb.hb.event_age_ms = 50;
  in.own->event_age_ms = 50;
  EXPECT_TRUE(build_view(in).busy);
}

TEST(RuntimeHeartbeat, TheConsumerPublishesTheLastEventAndMark) {
  sp_config cfg;
  sp_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  ASSERT_EQ(sp_init(&cfg), SP_OK);
  sp_mark_step(-1);
  const uint64_t t = sp_now_ns();
  sp_event ev{};
  ev.start_ns = t;
  ev.end_ns = t + 1000;
  ev.kind = SP_OP_COLLECTIVE;
  ev.coll = SP_COLL_ALL_REDUCE;
  ev.microbatch = 2;
  ev.peer = -1;
  ev.name_id = sp_intern("ddp-bucket-all-reduce");
  ASSERT_EQ(sp_record(&ev), SP_OK);
  sp_heartbeat hb{};
  hb.struct_size = sizeof hb;
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(5ms);
    seen = sp_get_heartbeat(&hb) == SP_OK && hb.kind == SP_OP_COLLECTIVE;
  }
  ASSERT_TRUE(seen);
  EXPECT_EQ(hb.last_marked_step, -1);
  EXPECT_EQ(hb.event_step, 0);
  EXPECT_EQ(hb.microbatch, 2);
  EXPECT_EQ(hb.event_end_ns, t + 1000);
  EXPECT_EQ(hb.events_in_step, 1u);
  EXPECT_STREQ(hb.name, "ddp-bucket-all-reduce");
  sp_mark_step(0);
  for (int i = 0; i < 200 && hb.last_marked_step != 0; ++i) {
    std::this_thread::sleep_for(5ms);
    sp_get_heartbeat(&hb);
  }
  EXPECT_EQ(hb.last_marked_step, 0);
  EXPECT_EQ(hb.events_in_step, 0u);
  hb.struct_size = 4;
  EXPECT_EQ(sp_get_heartbeat(&hb), SP_ERR_INVALID);
  sp_shutdown();
}

}  // namespace
}  // namespace sp::rank_pipeline
