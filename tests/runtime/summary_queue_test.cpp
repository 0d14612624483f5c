// The bounded hand-off to the transport: skip counting, waiting, closing.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "steps/summary_queue.h"

namespace sp::runtime {
namespace {

using namespace std::chrono_literals;

QueuedSummary item(int64_t step) {
  QueuedSummary q;
  q.summary.step = step;
  q.encoded = encode_summary(q.summary);
  return q;
}

TEST(SummaryQueue, FullQueueSkipsTheOldestWholeStepsAndCountsThem) {
  SummaryQueue q;
  q.reset(3);
  for (int64_t s = 0; s < 3; ++s) EXPECT_TRUE(q.push(item(s)));
  EXPECT_FALSE(q.push(item(3)));
  EXPECT_FALSE(q.push(item(4)));
  EXPECT_EQ(q.skipped(), 2u);
  EXPECT_EQ(q.size(), 3u);
  StepSummary out;
  for (int64_t expected : {2, 3, 4}) {
    ASSERT_EQ(q.pop(&out, 0ms), SummaryQueue::PopStatus::kOk);
    EXPECT_EQ(out.step, expected);
  }
  EXPECT_EQ(q.pop(&out, 0ms), SummaryQueue::PopStatus::kTimeout);
}

TEST(SummaryQueue, PopWaitsForAPushFromAnotherThread) {
  SummaryQueue q;
  q.reset(4);
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    q.push(item(42));
  });
  StepSummary out;
  EXPECT_EQ(q.pop(&out, 5000ms), SummaryQueue::PopStatus::kOk);
  EXPECT_EQ(out.step, 42);
  producer.join();
}

TEST(SummaryQueue, ClosedQueueStillHandsOutWhatItHoldsThenSaysClosed) {
  SummaryQueue q;
  q.reset(4);
  q.push(item(1));
  q.close();
  StepSummary out;
  EXPECT_EQ(q.pop(&out, 1000ms), SummaryQueue::PopStatus::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(q.pop(&out, 10000ms), SummaryQueue::PopStatus::kClosed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5000ms);  // did not wait for the timeout
}

TEST(SummaryQueue, CloseWakesAWaitingPop) {
  SummaryQueue q;
  q.reset(4);
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    q.close();
  });
  StepSummary out;
  EXPECT_EQ(q.pop(&out, 10000ms), SummaryQueue::PopStatus::kClosed);
  closer.join();
}

TEST(SummaryQueue, EncodedPopIntoATooSmallBufferKeepsTheSummary) {
  SummaryQueue q;
  q.reset(4);
  const QueuedSummary it = item(9);
  q.push(it);
  size_t size = 0;
  EXPECT_EQ(q.pop_encoded(nullptr, 0, &size, 0ms), SummaryQueue::PopStatus::kTooSmall);
  EXPECT_EQ(size, it.encoded.size());
  std::string buf(size, '\0');
  EXPECT_EQ(q.pop_encoded(buf.data(), buf.size(), &size, 0ms), SummaryQueue::PopStatus::kOk);
  EXPECT_EQ(buf, it.encoded);
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace sp::runtime
