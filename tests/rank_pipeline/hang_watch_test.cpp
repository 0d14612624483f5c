// Rank 0's hang watch end to end, many ranks in one process (simulated_job.h), with heartbeats
// the test controls: a rank that goes silent while the others wait is named once the step is
// overdue, on its host and GPU, across hosts (through rank 0's ask in the store); the line comes
// again as the stall doubles and a last one when steps complete; the episode reaches the hang
// board. A clean run writes no heartbeat to the store. A member whose socket closes mid-run sends
// as a host of its own, with one warning, and every later step arrives whole. A malformed
// heartbeat is one warning that never echoes its bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "hang/hang_board.h"
#include "host/host_identity.h"
#include "host/local_channel.h"
#include "simulated_job.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline::testing {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One rank's heartbeat, as its runtime would publish it; `alive` false: the rank is frozen (its
// source has nothing, so its transport sends nothing).
struct FakeRank {
  std::atomic<int64_t> step{-1};
  std::atomic<int64_t> marked_ms{0};
  std::atomic<uint64_t> events{0};
  std::atomic<bool> alive{true};
  void mark(int64_t s) {
    step = s;
    marked_ms = now_ms();
    events = 1;
  }
};

HeartbeatSource fake_source(std::shared_ptr<FakeRank> f) {
  return [f](Heartbeat* out) {
    if (!f->alive) return false;
    const int64_t age = now_ms() - f->marked_ms.load();
    out->last_marked_step = f->step;
    out->mark_age_ms = f->step < 0 ? -1 : age;
    out->has_event = true;
    out->kind = SP_OP_FORWARD;
    out->microbatch = 0;
    out->event_step = f->step + 1;
    out->event_age_ms = age;
    out->events_in_step = f->events;
    return true;
  };
}

struct HangJob {
  std::unique_ptr<SimulatedJob> job;
  std::vector<std::shared_ptr<FakeRank>> fakes;
  std::shared_ptr<HangBoard> board = std::make_shared<HangBoard>();
  std::mutex mutex;
  std::vector<std::string> lines;

  HangJob(int world, int per_host) {
    TransportOptions o;
    o.prefix = "test/";
    o.max_lag = 4;
    o.poll = 1ms;
    o.max_poll = 10ms;
    o.step_timeout = 60s;
    o.connect_timeout = 2s;
    o.hang_after = 500ms;
    o.hang_multiple = 4;
    job = std::make_unique<SimulatedJob>(world, per_host, o);
    for (int r = 0; r < world; ++r) {
      fakes.push_back(std::make_shared<FakeRank>());
      job->options(r).heartbeat = fake_source(fakes.back());
    }
    job->options(0).hang_board = board;
    job->options(0).hang_print = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
  void steps(int64_t from, int64_t to) {
    for (int64_t s = from; s < to; ++s) {
      for (auto& f : fakes) f->mark(s);
      job->push(s);
      std::this_thread::sleep_for(60ms);
    }
  }
  std::vector<std::string> said() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
  bool wait_for_lines(size_t n, std::chrono::seconds within) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end && said().size() < n) std::this_thread::sleep_for(20ms);
    return said().size() >= n;
  }
  // The board's open episode once `open` says (the watch shows it right after saying a line,
  // and clears it right after the last).
  bool wait_for_open(bool open, std::chrono::seconds within) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end && board->snapshot().open.has_value() != open) {
      std::this_thread::sleep_for(10ms);
    }
    return board->snapshot().open.has_value() == open;
  }
  // The rank that leads `host` (from its key in the store).
  int leader_of(const std::string& host) {
    std::string error;
    const auto v = job->rank(0).store->try_get("test/host/" + this_host(host).key, &error);
    return v ? std::stoi(v->substr(0, v->find(' '))) : -1;
  }
};

// A silent member of another host than rank 0's: named after the bound (the ask crosses the
// store), said again as the stall doubles, and over once it is back.
TEST(HangWatch, ASilentRankOnAnotherHostIsNamedThenResumed) {
  HangJob h(4, 2);
  h.job->start();
  h.steps(0, 12);
  ASSERT_TRUE(h.job->wait_for_batches(12, 10s));
  EXPECT_TRUE(h.said().empty()) << h.said()[0];  // a clean run says nothing
  const int victim = h.leader_of("node-1") == 2 ? 3 : 2;
  h.fakes[static_cast<size_t>(victim)]->alive = false;
  const auto frozen = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.wait_for_lines(1, 20s));
  const std::string first = h.said()[0];
  EXPECT_EQ(first.rfind("straggler_probe hang suspected step=12 silent=rank:" +
                        std::to_string(victim) + " host=node-1 gpu=" + std::to_string(victim % 2), 0), 0u)
      << first;
  EXPECT_NE(first.find("ranks waiting"), std::string::npos) << first;
  // What /metrics and /status show meanwhile: the same rank, its host and GPU.
  ASSERT_TRUE(h.wait_for_open(true, 2s));
  const OpenHang shown = *h.board->snapshot().open;
  EXPECT_EQ(shown.step, 12);
  ASSERT_FALSE(shown.ranks.empty());
  EXPECT_EQ(shown.ranks[0].state, "silent");
  EXPECT_EQ(shown.ranks[0].rank, victim);
  EXPECT_EQ(shown.ranks[0].host, "node-1");
  EXPECT_EQ(shown.ranks[0].gpu, victim % 2);
  EXPECT_EQ(shown.silent, 1u);
  EXPECT_EQ(h.board->snapshot().episodes, 1u);
  // The bound is max(4 x 60 ms, 500 ms); silence takes 2 s to count; the other host's leader
  // answers at its next ctl read (within 5 s): about 8.5 s, more on a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, 16s);
  ASSERT_TRUE(h.wait_for_lines(2, 30s));
  EXPECT_EQ(h.said()[1].rfind("straggler_probe hang still suspected step=12", 0), 0u) << h.said()[1];
  h.fakes[static_cast<size_t>(victim)]->alive = true;
  h.steps(12, 16);
  ASSERT_TRUE(h.wait_for_lines(3, 30s));
  EXPECT_TRUE(h.wait_for_open(false, 2s));  // closed with its last line
  h.job->stop(2s);  // before the job, which sends no more steps, stalls again
  EXPECT_EQ(h.board->snapshot().episodes, 1u);
  const std::string last = h.said().back();
  EXPECT_EQ(last.rfind("straggler_probe hang resumed step=12 after ", 0), 0u) << last;
  EXPECT_NE(last.find("silent=rank:" + std::to_string(victim)), std::string::npos) << last;
  const auto section = h.board->section();
  ASSERT_EQ(section["episodes"].size(), 1u);
  EXPECT_EQ(section["episodes"][0]["resumed"], true);
  EXPECT_EQ(section["episodes"][0]["named"][0]["rank"], victim);
  EXPECT_EQ(section["episodes"][0]["first_line"], first);
  EXPECT_TRUE(h.job->warnings().empty()) << h.job->warnings()[0];
}

// On rank 0's own host nothing crosses the store: the line comes right after the bound and
// silence (no wait for other hosts' answers), and no round is ever asked.
TEST(HangWatch, OnOneHostTheLineNeedsNoStore) {
  HangJob h(4, 4);
  h.job->start();
  h.steps(0, 12);
  ASSERT_TRUE(h.job->wait_for_batches(12, 10s));
  const uint64_t gets_before = h.job->ops(KvOp::kGet, 0, 1);
  // A member (in one process a leader's thread cannot be frozen: its aggregates would go on)
  const int victim = h.leader_of("node-0") == 2 ? 1 : 2;
  h.fakes[static_cast<size_t>(victim)]->alive = false;
  const auto frozen = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.wait_for_lines(1, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, 8s);  // 2.5 s, on a shared machine
  const std::string named = "silent=rank:" + std::to_string(victim) + " host=node-0 gpu=" + std::to_string(victim);
  EXPECT_NE(h.said()[0].find(named), std::string::npos) << h.said()[0];
  std::string error;
  EXPECT_FALSE(h.job->rank(0).store->try_get("test/hb/1", &error));
  // rank 0's gets are its ctl and table reads only (no heartbeat key)
  EXPECT_LT(h.job->ops(KvOp::kGet, 0, 1) - gets_before, 20u);
  h.job->stop(2s);
}

TEST(HostAggregated, AMemberWhoseSocketClosesSendsAsAHostOfItsOwn) {
  TransportOptions o;
  o.prefix = "test/";
  o.max_lag = 4;
  o.poll = 1ms;
  o.max_poll = 10ms;
  o.step_timeout = 20s;
  o.connect_timeout = 2s;
  o.fault = TransportFault::kCloseSocket;
  SimulatedJob job(4, 4, o);
  job.start();
  for (int64_t s = 0; s < 20; ++s) {
    job.push(s);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(job.wait_for_batches(20, 30s));
  const auto batches = job.batches();
  // Steps around the loss may lack it; every step from a few after it is whole again.
  for (int64_t s = 10; s < 20; ++s) {
    EXPECT_TRUE(batches[static_cast<size_t>(s)].complete) << s << " missing "
                                                          << batches[static_cast<size_t>(s)].missing;
  }
  job.stop(2s);
  const auto warnings = job.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("sends as a host of its own"), std::string::npos) << warnings[0];
}

// Bytes from another process on the CPU socket that are not a heartbeat: one warning, saying
// what was wrong and never the bytes; the connection (its summaries) and the job go on.
TEST(HostAggregated, AMalformedHeartbeatIsOneWarningNeverEchoed) {
  TransportOptions o;
  o.prefix = "test/";
  o.poll = 1ms;
  o.max_poll = 10ms;
  o.connect_timeout = 2s;
  SimulatedJob job(3, 3, o);
  job.start_rank(1);
  job.start_rank(0);
  std::string error, name;
  for (int i = 0; i < 200 && name.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    const auto v = job.rank(0).store->try_get("test/host/" + this_host("node-0").key, &error);
    if (v) name = v->substr(v->find(' ') + 1);
  }
  ASSERT_FALSE(name.empty());
  bool retry = false;
  auto socket = connect_frame_socket(name, &retry, &error);  // rank 2's place, by hand
  ASSERT_NE(socket, nullptr) << error;
  std::string hello;
  runtime::wire::Writer(&hello).i32(2);
  socket->queue(FrameType::kHello, hello, SIZE_MAX);
  Heartbeat evil;
  evil.has_event = true;
  evil.kind = SP_OP_FORWARD;
  evil.name = "\x1b[2JEVIL";
  for (int i = 0; i < 3; ++i) {
    socket->queue(FrameType::kHeartbeat, encode_heartbeat_frame(2, evil), SIZE_MAX);
  }
  ASSERT_TRUE(socket->flush(&error)) << error;
  for (int i = 0; i < 200 && job.rank(0).counters->bad_heartbeats + job.rank(1).counters->bad_heartbeats < 3; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(job.rank(0).counters->bad_heartbeats + job.rank(1).counters->bad_heartbeats, 3u);
  job.push(0);  // the connection was kept: "rank 2"'s summary still counts
  std::string summary;
  runtime::wire::Writer(&summary).i64(0);
  summary += encoded_summary(2, 3, 0);
  socket->queue(FrameType::kSummary, summary, SIZE_MAX);
  ASSERT_TRUE(socket->flush(&error)) << error;
  ASSERT_TRUE(job.wait_for_batches(1, 10s));
  EXPECT_TRUE(job.batches()[0].complete) << job.batches()[0].missing;
  socket->queue(FrameType::kBye, "", SIZE_MAX);
  socket->flush(&error);
  job.stop(1s);
  const auto warnings = job.warnings();
  ASSERT_EQ(warnings.size(), 1u) << warnings[0];
  EXPECT_NE(warnings[0].find("a heartbeat was rejected: from rank 2: op name too long or not "
                             "printable"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[0].find("EVIL"), std::string::npos);
}

// The bound before kMinSteps steps are known (issue 26: a fast job frozen in its first half-second
// got 30 s): none, 3 x the floor; one or two, the largest one's multiple, no lower than the
// floor; then the median's.
TEST(HangBound, FromTheStepsSeenBeforeThreeAreKnown) {
  using std::chrono::milliseconds;
  const milliseconds floor(10000);
  EXPECT_EQ(hang_bound_of(floor, 20, {}), milliseconds(30000));
  EXPECT_EQ(hang_bound_of(floor, 20, {40}), floor);          // a fast job: 10 s, not 30 s
  EXPECT_EQ(hang_bound_of(floor, 20, {40, 45}), floor);
  EXPECT_EQ(hang_bound_of(floor, 20, {12000}), milliseconds(240000));  // a slow one: above the floor at once
  EXPECT_EQ(hang_bound_of(floor, 20, {900, 12000}), milliseconds(240000));  // the larger of two
  EXPECT_EQ(hang_bound_of(floor, 20, {900, 1000, 12000}), milliseconds(20000));  // then the median
}

}  // namespace
}  // namespace sp::rank_pipeline::testing
