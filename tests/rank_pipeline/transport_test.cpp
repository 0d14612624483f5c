// The transport end to end, many ranks in one process on one in-process store: both protocols
// deliver every step whole and in order; a skipped step, a stalled rank and a full rank 0 hold
// nobody up; a stop reaches everyone; and the host-aggregated protocol's store operations per
// step depend on the number of hosts, never on the ranks per host.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <set>

#include "host/host_identity.h"
#include "simulated_job.h"

namespace sp::rank_pipeline::testing {
namespace {

TransportOptions fast_options() {
  TransportOptions o;
  o.prefix = "test/";
  o.max_lag = 4;
  o.poll = 1ms;
  o.max_poll = 10ms;
  o.step_timeout = 20s;
  o.connect_timeout = 2s;
  return o;
}

void expect_whole_steps(const std::vector<StepBatch>& batches, int64_t first, int64_t count,
                        int world) {
  ASSERT_EQ(batches.size(), static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const StepBatch& b = batches[static_cast<size_t>(i)];
    EXPECT_EQ(b.step, first + i);
    EXPECT_TRUE(b.complete) << "step " << b.step << " missing " << b.missing;
    ASSERT_EQ(b.by_rank.size(), static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      runtime::StepSummary s;
      std::string error;
      ASSERT_TRUE(runtime::decode_summary(b.by_rank[static_cast<size_t>(r)], &s, &error)) << error;
      EXPECT_EQ(s.rank, r);
      EXPECT_EQ(s.step, b.step);
    }
  }
}

std::vector<RankInfo> last_rank_table(const std::vector<StepBatch>& batches) {
  std::vector<RankInfo> table;
  for (const StepBatch& b : batches) {
    if (b.rank_table) table = *b.rank_table;
  }
  return table;
}

class BothProtocols : public ::testing::TestWithParam<LocalKvApi> {};

TEST_P(BothProtocols, DeliverEveryStepWholeInOrderWithTheRankTable) {
  SimulatedJob job(8, 4, fast_options(), GetParam());
  job.start();
  for (int64_t s = 0; s < 10; ++s) job.push(s);
  ASSERT_TRUE(job.wait_for_batches(10, 20s));
  job.stop(2s);
  expect_whole_steps(job.batches(), 0, 10, 8);
  EXPECT_EQ(job.rank(0).counters->protocol.load(), GetParam() == LocalKvApi::kFull ? 1 : 2);
  EXPECT_TRUE(job.warnings().empty()) << job.warnings()[0];
  // The rank table reaches rank 0 (it travels once, not with every step).
  const std::vector<RankInfo> table = last_rank_table(job.batches());
  ASSERT_EQ(table.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(table[static_cast<size_t>(r)].rank, r);
    EXPECT_EQ(table[static_cast<size_t>(r)].host, "node-" + std::to_string(r / 4));
    EXPECT_EQ(table[static_cast<size_t>(r)].local_rank, r % 4);
    EXPECT_EQ(table[static_cast<size_t>(r)].device, r % 4);
  }
}

TEST_P(BothProtocols, ASkippedStepIsGivenUpWithoutStallingTheRest) {
  SimulatedJob job(8, 4, fast_options(), GetParam());
  job.start();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < 10; ++s) {
    // rank 5 skipped step 3 (its runtime's queue dropped it); ranks 4-7 (a whole host) step 6
    job.push(s, [s](int r) { return !(s == 3 && r == 5) && !(s == 6 && r >= 4); });
  }
  ASSERT_TRUE(job.wait_for_batches(10, 15s));
  // far sooner than the step timeout (20 s): the later steps settle the skipped ones
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  const auto batches = job.batches();
  const std::string why_skipped = GetParam() == LocalKvApi::kFull
                                      ? " (their host's leader sent the step without them)"
                                      : " (those ranks skipped it)";
  for (const StepBatch& b : batches) {
    if (b.step == 3) {
      EXPECT_FALSE(b.complete);
      EXPECT_EQ(b.missing, "5");
      // Both protocols word it through step_assembly.h; the per-rank collector sees the rank's
      // own later step, the host-aggregated one only its host's leader's message without it.
      EXPECT_EQ(b.why_incomplete, "no summary from rank(s) 5" + why_skipped);
    } else if (b.step == 6) {
      EXPECT_FALSE(b.complete);
      EXPECT_EQ(b.missing, "4,5,6,7");
      EXPECT_EQ(b.why_incomplete, "no summary from rank(s) 4,5,6,7" + why_skipped);
    } else {
      EXPECT_TRUE(b.complete) << b.step << ": " << b.missing;
    }
  }
}

TEST_P(BothProtocols, AStopFromOneRankReachesEveryRank) {
  SimulatedJob job(8, 4, fast_options(), GetParam());
  job.start();
  for (int64_t s = 0; s < 3; ++s) job.push(s);
  ASSERT_TRUE(job.wait_for_batches(3, 10s));
  job.rank(6).stop->raise("injected");
  for (int64_t s = 3; s < 12; ++s) job.push(s);  // a few more steps carry the news
  for (int r = 0; r < 8; ++r) {
    if (r == 6) continue;
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (job.rank(r).remote_stops.load() == 0 && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(job.rank(r).remote_stops.load(), 1) << "rank " << r;
  }
}

TEST_P(BothProtocols, TheLastStepsArriveWhenTheJobEnds) {
  SimulatedJob job(8, 4, fast_options(), GetParam());
  job.start();
  for (int64_t s = 0; s < 5; ++s) job.push(s);
  job.stop(5s);  // at once: the threads drain what is queued
  expect_whole_steps(job.batches(), 0, 5, 8);
}

INSTANTIATE_TEST_SUITE_P(Transport, BothProtocols,
                         ::testing::Values(LocalKvApi::kFull, LocalKvApi::kBasic),
                         [](const auto& param_info) {
                           return param_info.param == LocalKvApi::kFull ? "HostAggregated"
                                                                        : "PerRank";
                         });

TEST(HostAggregated, AStalledRankIsNamedMissingAfterTheHostTimeout) {
  TransportOptions o = fast_options();
  o.host_timeout = 300ms;
  SimulatedJob job(8, 4, o);
  job.start();
  job.push(0);
  job.push(1, [](int r) { return r != 6; });  // rank 6 stalls: nothing more from it
  job.push(2, [](int r) { return r != 6; });
  ASSERT_TRUE(job.wait_for_batches(3, 10s));
  const auto batches = job.batches();
  EXPECT_TRUE(batches[0].complete);
  EXPECT_EQ(batches[1].missing, "6");
  EXPECT_EQ(batches[2].missing, "6");
  EXPECT_EQ(batches[1].why_incomplete, "no summary from rank(s) 6 (their host's leader sent the step without them)");
}

// The per-rank collector's steps close through StepAssembler (step_assembly.h): a rank that
// stalls (sends nothing more, never moves past) holds its step until the step timeout, which
// then gives it up naming that rank, and the steps behind it follow in order.
TEST(PerRank, AStalledRankIsNamedMissingAfterTheStepTimeout) {
  TransportOptions o = fast_options();
  o.step_timeout = 400ms;
  SimulatedJob job(4, 2, o, LocalKvApi::kBasic);
  job.start();
  const auto t0 = std::chrono::steady_clock::now();
  job.push(0);
  job.push(1, [](int r) { return r != 3; });  // rank 3 stalls: nothing more from it
  job.push(2, [](int r) { return r != 3; });
  ASSERT_TRUE(job.wait_for_batches(3, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 400ms);  // not given up before the timeout
  const auto batches = job.batches();
  EXPECT_EQ(job.rank(0).counters->protocol.load(), 2);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_TRUE(batches[0].complete);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(batches[i].step, static_cast<int64_t>(i));
    EXPECT_FALSE(batches[i].complete);
    EXPECT_EQ(batches[i].missing, "3");
    EXPECT_EQ(batches[i].why_incomplete, "no summary from rank(s) 3 within 0.4 s");
    EXPECT_TRUE(batches[i].by_rank[3].empty());
    EXPECT_FALSE(batches[i].by_rank[2].empty());
  }
}

TEST(HostAggregated, BackPressureKeepsTheStoreBoundedWhileRankZeroIsBehind) {
  TransportOptions o = fast_options();
  SimulatedJob job(8, 4, o);
  job.start();
  job.push(0);
  for (int64_t s = 1; s < 40; ++s) job.push(s, [](int r) { return r != 0; });  // rank 0 is slow
  ASSERT_TRUE(job.wait_for_batches(1, 10s));
  std::this_thread::sleep_for(500ms);
  // Steps 1..4 may be posted (ack 0 + max_lag 4), nothing later: two keys per posted step and
  // the fixed keys (ctl, ranks, the hosts' leader and member keys).
  EXPECT_LE(job.keys_in_store(), 2u * 4 + 2 + 4);
  uint64_t held_ms = 0;  // the other host's leader held back
  for (int r = 4; r < 8; ++r) held_ms += job.rank(r).counters->held_back_ms.load();
  EXPECT_GT(held_ms, 0u);
  EXPECT_GT(job.rank(5).source->queued(), 20u);  // what is not sent waits in the rank's own queue
  for (int64_t s = 1; s < 40; ++s) job.push(s, [](int r) { return r == 0; });  // rank 0 catches up
  ASSERT_TRUE(job.wait_for_batches(40, 20s));
  expect_whole_steps(job.batches(), 0, 40, 8);
}

// Store operations of a job of `hosts` hosts with `per_host` ranks each over `steps` steps.
struct OpCounts {
  int members = 0, leaders_besides_rank0 = 0;  // ranks other than 0
  uint64_t members_total = 0;  // every operation of the ranks that do not lead a host
  uint64_t appends = 0, removes = 0, compare_sets = 0, sets = 0;
  uint64_t leader_adds = 0;    // the hosts' adds other than rank 0's
};

OpCounts count_ops(int hosts, int per_host, int64_t steps) {
  SimulatedJob job(hosts * per_host, per_host, fast_options());
  job.start();
  for (int64_t s = 0; s < steps; ++s) job.push(s);
  EXPECT_TRUE(job.wait_for_batches(static_cast<size_t>(steps), 30s));
  job.stop(2s);
  OpCounts c;
  for (int r = 1; r < job.world(); ++r) {  // rank 0 also collects: counted apart
    const bool leads = job.rank(r).counters->host_messages_sent.load() > 0;
    if (!leads) {
      c.members += 1;
      c.members_total += job.rank(r).store->counters().ops();
    } else {
      c.leader_adds += job.rank(r).store->counters().ops(KvOp::kAdd);
    }
  }
  const bool rank0_leads = job.rank(0).counters->host_messages_sent.load() > 0;
  const int world = job.world();
  c.appends = job.ops(KvOp::kAppend) - static_cast<uint64_t>(world);  // less the rank rows
  c.compare_sets = job.ops(KvOp::kCompareSet) - static_cast<uint64_t>(world);  // less elections
  c.removes = job.ops(KvOp::kRemove);
  c.sets = job.ops(KvOp::kSet);
  // less their own count in host/<h>/n
  c.leader_adds -= static_cast<uint64_t>(rank0_leads ? hosts - 1 : hosts);
  c.leaders_besides_rank0 = rank0_leads ? hosts - 1 : hosts;
  return c;
}

TEST(HostAggregated, StoreOperationsPerStepDoNotGrowWithTheRanksPerHost) {
  constexpr int64_t kSteps = 12;
  const OpCounts two = count_ops(4, 2, kSteps);
  const OpCounts eight = count_ops(4, 8, kSteps);
  for (const OpCounts& c : {two, eight}) {
    // A member's only store operations are its three at start (election, count, rank row).
    EXPECT_EQ(c.members_total, 3u * static_cast<uint64_t>(c.members));
    EXPECT_EQ(c.appends, 4u * kSteps);           // one message per host and step
    EXPECT_EQ(c.removes, 2u * kSteps);           // rank 0 deletes the step's two keys
    EXPECT_EQ(c.compare_sets, kSteps + 1);       // rank 0's acks (and its first)
    EXPECT_EQ(c.sets, 0u);
    // the other hosts' counter adds: one per step each, plus reads of their member count at
    // start (time-bound, never per step)
    EXPECT_GE(c.leader_adds, static_cast<uint64_t>(c.leaders_besides_rank0) * kSteps);
  }
  EXPECT_GE(two.members, 4 * 1 - 1);
  EXPECT_GE(eight.members, 4 * 7 - 1);
  EXPECT_EQ(two.appends, eight.appends);
  EXPECT_EQ(two.removes, eight.removes);
  EXPECT_EQ(two.compare_sets, eight.compare_sets);
}

// At 64 and 4096 ranks (8 per host): per step, one append per host, rank 0's two deletes and
// one compare_set, and nothing at all from the ranks that do not lead. Rank 0's own operations
// per step are the same at both sizes but for its polls of the step's counter, whose number
// depends on how long the hosts take (here: two threads driving 4095 simulated ranks).
TEST(HostAggregated, StoreOperationsPerStepAt64And4096Ranks) {
  // 4096 ranks in one process hold two sockets per member: raise the soft limit if it is lower.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 10000 && files.rlim_max >= 10000) {
    files.rlim_cur = 10000;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (files.rlim_cur < 10000) GTEST_SKIP() << "needs 10000 open files, the limit is " << files.rlim_cur;
  constexpr int64_t kSteps = 6;
  struct PerStep {
    double appends = 0, removes = 0, compare_sets = 0, sets = 0;
    double rank0_removes = 0, rank0_compare_sets = 0, rank0_gets = 0, rank0_adds = 0;
    uint64_t member_ops = 0;
    int members = 0, hosts = 0;
  };
  auto measure = [&](int world) {
    SimulatedJob job(world, 8, fast_options());
    job.start_driven(2);
    for (int64_t s = 0; s < kSteps; ++s) job.push(s);
    EXPECT_TRUE(job.wait_for_batches(kSteps, 60s));
    job.stop(5s);
    expect_whole_steps(job.batches(), 0, kSteps, world);
    auto per_step = [&](uint64_t n) { return static_cast<double>(n) / static_cast<double>(kSteps); };
    PerStep p;
    p.hosts = world / 8;
    p.appends = per_step(job.ops(KvOp::kAppend) - static_cast<uint64_t>(world));  // less rows
    p.removes = per_step(job.ops(KvOp::kRemove));
    // less the elections and rank 0's first ack
    p.compare_sets = per_step(job.ops(KvOp::kCompareSet) - static_cast<uint64_t>(world) - 1);
    p.sets = per_step(job.ops(KvOp::kSet));
    const KvCounters& r0 = job.rank(0).store->counters();
    p.rank0_removes = per_step(r0.ops(KvOp::kRemove));
    p.rank0_compare_sets = per_step(r0.ops(KvOp::kCompareSet) - 2);
    p.rank0_gets = per_step(r0.ops(KvOp::kGet));
    p.rank0_adds = per_step(r0.ops(KvOp::kAdd));
    for (int r = 1; r < world; ++r) {
      if (job.rank(r).counters->host_messages_sent.load() > 0) continue;
      ++p.members;
      p.member_ops += job.rank(r).store->counters().ops();
    }
    return p;
  };
  const PerStep small = measure(64), large = measure(4096);
  for (const PerStep& p : {small, large}) {
    EXPECT_EQ(p.appends, p.hosts);  // one message per host and step
    EXPECT_EQ(p.removes, 2);
    EXPECT_EQ(p.compare_sets, 1);
    EXPECT_EQ(p.sets, 0);
    // the ranks that do not lead: their 3 start-up operations (election, count, row), no more
    EXPECT_GE(p.members, 8 * p.hosts - p.hosts - 1);
    EXPECT_EQ(p.member_ops, 3u * static_cast<uint64_t>(p.members));
    // rank 0: two deletes, one compare_set, one get per step (and, while ranks are still
    // starting, a read of the rank table every 100 ms)
    EXPECT_EQ(p.rank0_removes, 2);
    EXPECT_EQ(p.rank0_compare_sets, 1);
    EXPECT_GE(p.rank0_gets, 1);
    EXPECT_LE(p.rank0_gets, 5);
  }
  std::printf("per step: appends %.0f / %.0f, rank 0's counter polls %.1f / %.1f (64 / 4096 ranks)\n",
              small.appends, large.appends, small.rank0_adds, large.rank0_adds);
}

TEST(HostAggregated, ARankThatStartsLateHoldsUpOnlyTheStepsBeforeItJoined) {
  SimulatedJob job(8, 4, fast_options());
  for (int r = 7; r >= 0; --r) {
    if (r != 6) job.start_rank(r);
  }
  for (int64_t s = 0; s < 4; ++s) job.push(s, [](int r) { return r != 6; });
  std::this_thread::sleep_for(300ms);
  job.start_rank(6);  // registers after its leader's first read: not waited for before it joins
  const auto joined = std::chrono::steady_clock::now();
  for (int64_t s = 4; s < 8; ++s) job.push(s);
  ASSERT_TRUE(job.wait_for_batches(8, 15s));
  // settled once a later step covered every rank, long before the step timeout (20 s)
  EXPECT_LT(std::chrono::steady_clock::now() - joined, 10s);
  const auto batches = job.batches();
  for (int64_t s = 0; s < 8; ++s) {
    const StepBatch& b = batches[static_cast<size_t>(s)];
    EXPECT_EQ(b.step, s);
    if (s < 4) {
      EXPECT_EQ(b.missing, "6") << s;
    } else {
      EXPECT_TRUE(b.complete) << s << ": " << b.missing;
    }
  }
}

TEST(HostAggregated, ARankThatCannotReachItsLeaderSendsAsAHostOfItsOwn) {
  TransportOptions o = fast_options();
  o.connect_timeout = 300ms;
  SimulatedJob job(4, 4, o);
  // A leader offer whose socket is not there: rank 3 (started first) finds it and cannot connect.
  std::string error;
  job.rank(3).store->compare_set("test/host/" + this_host("node-0").key, "",
                                 "1 straggler_probe.nobody", &error);
  job.start();
  for (int64_t s = 0; s < 5; ++s) job.push(s);
  ASSERT_TRUE(job.wait_for_batches(5, 15s));
  expect_whole_steps(job.batches(), 0, 5, 4);
}

}  // namespace
}  // namespace sp::rank_pipeline::testing
