// The per-thread ring and the mark queue: wrap-around, drop counting, and ordering under a
// concurrent consumer.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "straggler_probe/mpsc_queue.h"
#include "capture/spsc_ring.h"

namespace sp::runtime {
namespace {

struct Rec {
  uint64_t seq;
  uint64_t pad;
};

TEST(SpscRing, RejectsCapacityThatIsNotAPowerOfTwo) {
  EXPECT_EQ(SpscRing<Rec>::create(0), nullptr);
  EXPECT_EQ(SpscRing<Rec>::create(100), nullptr);
  ASSERT_NE(SpscRing<Rec>::create(128), nullptr);
}

TEST(SpscRing, FullRingDropsAndCountsThenWrapsAfterDrain) {
  auto ring = SpscRing<Rec>::create(8);
  ASSERT_NE(ring, nullptr);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(ring->try_push({i, 0}));
  EXPECT_FALSE(ring->try_push({8, 0}));
  EXPECT_FALSE(ring->try_push({9, 0}));
  EXPECT_EQ(ring->pushed(), 8u);
  EXPECT_EQ(ring->dropped(), 2u);

  std::vector<uint64_t> seen;
  EXPECT_EQ(ring->drain([&](const Rec& r) { seen.push_back(r.seq); }), 8u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));

  // Several laps around the storage: order and counts survive the index wrap.
  seen.clear();
  for (uint64_t lap = 0; lap < 5; ++lap) {
    for (uint64_t i = 0; i < 6; ++i) EXPECT_TRUE(ring->try_push({100 + lap * 6 + i, 0}));
    ring->drain([&](const Rec& r) { seen.push_back(r.seq); });
  }
  ASSERT_EQ(seen.size(), 30u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 100 + i);
  EXPECT_EQ(ring->pushed(), 38u);
  EXPECT_EQ(ring->dropped(), 2u);
}

TEST(SpscRing, DiscardAllForgetsPublishedRecords) {
  auto ring = SpscRing<Rec>::create(4);
  ASSERT_NE(ring, nullptr);
  ring->try_push({1, 0});
  ring->try_push({2, 0});
  EXPECT_EQ(ring->discard_all(), 2u);
  size_t n = 0;
  ring->drain([&](const Rec&) { ++n; });
  EXPECT_EQ(n, 0u);
}

TEST(SpscRing, ConcurrentConsumerSeesEveryAcceptedRecordInOrder) {
  auto ring = SpscRing<Rec>::create(256);
  ASSERT_NE(ring, nullptr);
  constexpr uint64_t kAttempts = 200000;
  std::atomic<bool> done{false};
  std::vector<uint64_t> seen;
  seen.reserve(kAttempts);
  std::thread consumer([&] {
    while (!done.load(std::memory_order_acquire)) {
      ring->drain([&](const Rec& r) { seen.push_back(r.seq); });
    }
    ring->drain([&](const Rec& r) { seen.push_back(r.seq); });
  });
  uint64_t accepted = 0;
  for (uint64_t i = 0; i < kAttempts; ++i) accepted += ring->try_push({i, ~i}) ? 1 : 0;
  done.store(true, std::memory_order_release);
  consumer.join();

  EXPECT_EQ(accepted + ring->dropped(), kAttempts);
  ASSERT_EQ(seen.size(), accepted);
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_LT(seen[i - 1], seen[i]);
}

TEST(BoundedMpscQueue, ManyProducersOneConsumerNoLossUntilFull) {
  BoundedMpscQueue<Rec, 1024> q;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 200;  // 800 < 1024: nothing may be rejected
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&q, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) ASSERT_TRUE(q.try_push({static_cast<uint64_t>(t), i}));
    });
  }
  for (auto& th : producers) th.join();
  std::vector<uint64_t> next(kThreads, 0);
  Rec r{};
  size_t n = 0;
  while (q.try_pop(&r)) {
    EXPECT_EQ(r.pad, next[r.seq]++);  // per-producer order is kept
    ++n;
  }
  EXPECT_EQ(n, kThreads * kPerThread);
}

TEST(BoundedMpscQueue, FullQueueRejects) {
  BoundedMpscQueue<Rec, 4> q;
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push({i, 0}));
  EXPECT_FALSE(q.try_push({4, 0}));
  Rec r{};
  EXPECT_TRUE(q.try_pop(&r));
  EXPECT_EQ(r.seq, 0u);
  EXPECT_TRUE(q.try_push({5, 0}));
}

}  // namespace
}  // namespace sp::runtime
