// Heartbeats (rank_pipeline/src/hang/heartbeat.h): a member's frame to its host's leader, and a host's
// aggregate, which reaches rank 0 over its socket or through the store (hb/<round>). Mutated and
// cut frames and aggregates: one line (never the bytes) or a heartbeat whose every field passed
// its checks, and that round-trips.
#include <gtest/gtest.h>

#include "fuzz_engine.h"
#include "hang/heartbeat.h"

namespace sp::rank_pipeline {
namespace {

using fuzz::Outcome;
using fuzz::Stats;

constexpr int kWorld = 8;

std::vector<Heartbeat> sample_beats() {
  Heartbeat none;
  Heartbeat full;
  full.last_marked_step = 41;
  full.mark_age_ms = 120;
  full.has_event = true;
  full.kind = 4;
  full.coll = 1;
  full.microbatch = 3;
  full.event_step = 42;
  full.event_age_ms = 7;
  full.events_in_step = 1234;
  full.name = "ddp-bucket-all-reduce";
  Heartbeat wide = full;
  wide.name = std::string(kMaxHeartbeatName, 'x');
  wide.events_in_step = UINT64_MAX >> 1;
  wide.last_marked_step = INT64_MAX >> 1;
  return {none, full, wide};
}

// What every accepted heartbeat must be: printable, bounded.
void expect_sound(const Heartbeat& hb) {
  EXPECT_LE(hb.name.size(), kMaxHeartbeatName);
  EXPECT_TRUE(fuzz::printable_ascii(hb.name)) << "a name kept raw";
  EXPECT_TRUE(fuzz::printable_ascii(describe_op(hb)));
}

bool same(const Heartbeat& a, const Heartbeat& b) {
  return a.last_marked_step == b.last_marked_step && a.mark_age_ms == b.mark_age_ms &&
         a.has_event == b.has_event && a.kind == b.kind && a.coll == b.coll &&
         a.microbatch == b.microbatch && a.event_step == b.event_step &&
         a.event_age_ms == b.event_age_ms && a.events_in_step == b.events_in_step && a.name == b.name;
}

TEST(FuzzHeartbeat, MemberFrames) {
  fuzz::Corpus c;
  int rank = 0;
  for (const Heartbeat& hb : sample_beats()) c.seeds.push_back(encode_heartbeat_frame(rank++, hb));
  c.dictionary = {"ddp", std::string(1, '\x7f'), std::string("\x0f", 1)};
  const Stats st = fuzz::run_cases("heartbeat frames (host socket)", c, fuzz::case_count(),
                                   [](const std::string& bytes) {
    int r = -1;
    Heartbeat hb;
    Outcome o;
    o.accepted = decode_heartbeat_frame(bytes, kWorld, &r, &hb, &o.error);
    if (o.accepted) {
      EXPECT_TRUE(r >= 0 && r < kWorld);
      expect_sound(hb);
      int r2 = -1;
      Heartbeat back;
      std::string error;
      EXPECT_TRUE(decode_heartbeat_frame(encode_heartbeat_frame(r, hb), kWorld, &r2, &back, &error)) << error;
      EXPECT_TRUE(r2 == r && same(hb, back)) << "a heartbeat frame does not round-trip";
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzHeartbeat, HostAggregates) {
  const std::vector<Heartbeat> beats = sample_beats();
  HostBeats a;
  a.leader = 0;
  a.round = 3;
  for (int r = 0; r < 3; ++r) {
    RankBeat rb;
    rb.rank = r;
    rb.heard = r != 2;
    rb.silent_ms = r * 250;
    if (rb.heard) rb.hb = beats[static_cast<size_t>(r) + 1];
    a.ranks.push_back(rb);
  }
  HostBeats b;
  b.leader = 4;
  std::string one, two;
  append_host_beats(a, &one);
  append_host_beats(a, &two);
  append_host_beats(b, &two);
  fuzz::Corpus c;
  c.seeds = {one, two};
  c.dictionary = {"SPHB", std::string("SPHB\x01", 5), std::string("\x00\x00\x00\x00", 4)};
  c.every_truncation_up_to = 256;
  const Stats st = fuzz::run_cases("host heartbeats (store hb/<round>, socket)", c, fuzz::case_count(),
                                   [](const std::string& bytes) {
    std::vector<HostBeats> out;
    Outcome o;
    o.accepted = parse_host_beats(bytes, kWorld, &out, &o.error);
    std::string again;
    for (const HostBeats& h : out) {
      EXPECT_LE(h.ranks.size(), kMaxHostBeats);
      for (const RankBeat& rb : h.ranks) {
        EXPECT_TRUE(rb.rank >= 0 && rb.rank < kWorld);
        expect_sound(rb.hb);
      }
      append_host_beats(h, &again);
    }
    std::vector<HostBeats> back;
    std::string error;
    EXPECT_TRUE(parse_host_beats(again, kWorld, &back, &error)) << error;
    EXPECT_EQ(back.size(), out.size());
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

}  // namespace
}  // namespace sp::rank_pipeline
