// Rank 0's hang watch end to end, many ranks in one process (simulated_job.h), with heartbeats
// the test controls: a rank that goes silent while the others wait is named once the step is
// overdue, on its host and GPU, across hosts (through rank 0's ask in the store); the line comes
// again as the stall doubles and a last one when steps complete; the episode reaches the hang
// board. A clean run writes no heartbeat to the store. A member whose socket closes mid-run sends
// as a host of its own, with one warning, and every later step arrives whole.
#include <gtest/gtest.h>

#include <algorithm>

#include "hang_board.h"
#include "host_identity.h"
#include "simulated_job.h"

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
  // The bound is max(4 x 60 ms, 500 ms); silence takes 2 s to count; the other host's leader
  // answers at its next ctl read (within 5 s).
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, 12s);
  ASSERT_TRUE(h.wait_for_lines(2, 30s));
  EXPECT_EQ(h.said()[1].rfind("straggler_probe hang still suspected step=12", 0), 0u) << h.said()[1];
  h.fakes[static_cast<size_t>(victim)]->alive = true;
  h.steps(12, 16);
  ASSERT_TRUE(h.wait_for_lines(3, 30s));
  h.job->stop(2s);  // before the job, which sends no more steps, stalls again
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
  h.fakes[2]->alive = false;
  const auto frozen = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.wait_for_lines(1, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - frozen, 4s);
  EXPECT_NE(h.said()[0].find("silent=rank:2 host=node-0 gpu=2"), std::string::npos) << h.said()[0];
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

}  // namespace
}  // namespace sp::rank_pipeline::testing
