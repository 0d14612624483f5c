// The clock offset protocol end to end over the in-process store: rank 0 answering, the other
// ranks with clocks shifted (and one drifting) by known amounts.
#include "clock/clock_sync.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store/local_kv_store.h"

namespace sp::rank_pipeline {
namespace {

using namespace std::chrono_literals;

int64_t true_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Output {
  std::mutex mutex;
  std::vector<std::string> lines, warnings;
  size_t count(const std::string& needle, bool warning = false) {
    std::lock_guard<std::mutex> lock(mutex);
    size_t n = 0;
    for (const auto& l : warning ? warnings : lines) n += l.find(needle) != std::string::npos;
    return n;
  }
};

ClockSyncHooks hooks(Output* out, LocalClock clock, std::atomic<int64_t>* applied) {
  ClockSyncHooks h;
  h.clock = std::move(clock);
  h.apply = [applied](int64_t v) { applied->store(v); };
  h.print = [out](const std::string& l) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->lines.push_back(l);
  };
  h.warn = [out](const std::string& l) {
    std::lock_guard<std::mutex> lock(out->mutex);
    out->warnings.push_back(l);
  };
  return h;
}

// The number after `key` in the first line that has it.
double number_after(Output* out, const std::string& key) {
  std::lock_guard<std::mutex> lock(out->mutex);
  for (const auto& l : out->lines) {
    const size_t at = l.find(key);
    if (at != std::string::npos) return std::stod(l.substr(at + key.size()));
  }
  return -1;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within) {
  const auto end = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(ClockSync, EveryRankLearnsItsOffsetAndRankZeroReportsIt) {
  auto store = std::make_shared<KvClient>(make_local_kv_store());
  ClockSyncOptions o;
  o.world_size = 3;
  o.prefix = "straggler_probe/7/";
  o.period = 1200ms;
  Output out;
  std::atomic<int64_t> unused{0}, applied1{1}, applied2{1};
  const int64_t shift1 = 250'000'000;   // rank 1's clock runs 250 ms ahead
  const int64_t shift2 = -40'000'000;   // rank 2's 40 ms behind, and gains 2000 ppm
  const int64_t t0 = true_now();
  ClockSyncOptions o0 = o, o1 = o, o2 = o;
  o1.rank = 1;
  o2.rank = 2;
  ClockSync server(o0, store, hooks(&out, true_now, &unused));
  ClockSync rank1(o1, store, hooks(&out, [=] { return true_now() + shift1; }, &applied1));
  ClockSync rank2(o2, store, hooks(&out, [=] {
    const int64_t t = true_now();
    return t + shift2 + (t - t0) * 2 / 1000;
  }, &applied2));

  ASSERT_TRUE(eventually([&] { return out.count("clock offsets to rank 0") == 1; }, 10s));
  const auto rows = server.table();
  ASSERT_EQ(rows.size(), 3u);
  for (int r = 1; r < 3; ++r) {
    SCOPED_TRACE(r);
    ASSERT_TRUE(rows[r].known) << rows[r].error;
    // Within the reported uncertainty of the true offset (plus the drift between estimate and
    // check for rank 2) and applied to the rank's summaries.
    EXPECT_LT(rows[r].uncertainty_ns, 5'000'000);
  }
  EXPECT_LE(std::llabs(rows[1].offset_ns + shift1), rows[1].uncertainty_ns);
  EXPECT_NEAR(static_cast<double>(rows[2].offset_ns), static_cast<double>(-shift2),
              static_cast<double>(rows[2].uncertainty_ns) + 2e6);
  EXPECT_EQ(applied1.load(), rank1.table()[0].offset_ns);
  EXPECT_EQ(rank1.table()[0].offset_ns, rows[1].offset_ns);
  EXPECT_NEAR(number_after(&out, "offsets to rank 0: max |offset| "), 250'000.0, 5'000.0);
  EXPECT_EQ(out.count("(rank 1)"), 1u);

  // After the next estimate the skew is known: rank 2's clock gains 2000 ppm on rank 0's, so
  // its offset to rank 0 shrinks by 2000 ppm.
  ASSERT_TRUE(eventually([&] { return out.count("clock skew to rank 0") == 1; }, 10s));
  const auto later = server.table();
  ASSERT_TRUE(later[2].skew_ppm);
  EXPECT_NEAR(*later[2].skew_ppm, -2000.0, 200.0);
  ASSERT_TRUE(later[1].skew_ppm);
  EXPECT_NEAR(*later[1].skew_ppm, 0.0, 200.0);
  EXPECT_NEAR(number_after(&out, "max |skew| "), 2000.0, 200.0);
  EXPECT_EQ(out.warnings.size(), 0u);

  for (ClockSync* c : {&rank1, &rank2, &server}) c->request_stop();
  for (ClockSync* c : {&rank1, &rank2, &server}) EXPECT_TRUE(c->join(2s));
}

TEST(ClockSync, NoAnswerFromRankZeroMeansOffsetZeroAndOneWarning) {
  auto store = std::make_shared<KvClient>(make_local_kv_store());
  ClockSyncOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.estimator.first_timeout = 100ms;
  o.period = 50ms;  // several failed rounds: still one warning
  Output out;
  std::atomic<int64_t> applied{-1};
  ClockSync rank1(o, store, hooks(&out, true_now, &applied));
  ASSERT_TRUE(eventually([&] { return rank1.table()[0].failures >= 3; }, 5s));
  rank1.request_stop();
  EXPECT_TRUE(rank1.join(2s));
  EXPECT_EQ(applied.load(), -1);  // never applied: the runtime keeps offset 0
  EXPECT_FALSE(rank1.table()[0].known);
  EXPECT_EQ(out.count("not estimated (no answer from rank 0 within 100 ms)", true), 1u);
  EXPECT_EQ(out.warnings.size(), 1u);
}

TEST(ClockSync, RankZeroSaysWhichRanksNeverReported) {
  auto store = std::make_shared<KvClient>(make_local_kv_store());
  ClockSyncOptions o;
  o.world_size = 3;
  o.start_line_after = 300ms;
  Output out;
  std::atomic<int64_t> unused{0};
  ClockSync server(o, store, hooks(&out, true_now, &unused));
  ASSERT_TRUE(eventually([&] { return out.count("clock offsets to rank 0") == 1; }, 5s));
  EXPECT_EQ(out.count("no estimate from rank(s) 1,2 (offset 0 used)"), 1u) << out.lines[0];
  server.request_stop();
  EXPECT_TRUE(server.join(2s));
}

TEST(ClockSync, ResultMessagesRoundTrip) {
  ClockEstimate e;
  e.ok = true;
  e.offset_ns = -123456789;
  e.uncertainty_ns = 4321;
  e.rtt_ns = 8642;
  RankClock row;
  ASSERT_TRUE(parse_clock_result(format_clock_result(5, e, 12.5), &row));
  EXPECT_EQ(row.rank, 5);
  EXPECT_TRUE(row.known);
  EXPECT_EQ(row.offset_ns, -123456789);
  EXPECT_EQ(row.uncertainty_ns, 4321);
  EXPECT_EQ(row.rtt_ns, 8642);
  ASSERT_TRUE(row.skew_ppm);
  EXPECT_DOUBLE_EQ(*row.skew_ppm, 12.5);
  ASSERT_TRUE(parse_clock_result(format_clock_result(2, ClockEstimate{}, std::nullopt), &row));
  EXPECT_FALSE(row.known);
  EXPECT_FALSE(row.skew_ppm);
  EXPECT_FALSE(parse_clock_result("req 1", &row));
  EXPECT_FALSE(parse_clock_result("res x 1 2 3 4 nan", &row));
}

}  // namespace
}  // namespace sp::rank_pipeline
