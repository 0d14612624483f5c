// Launch brackets (pure): which region an activity was launched in, from the correlation ids of
// the markers around it.
#include <gtest/gtest.h>

#include "attribution/launch_brackets.h"

namespace sp::cupti {
namespace {

using Decision = LaunchBrackets::Decision;

LaunchMarkers::Marker begin(uint64_t seq, uint64_t id) { return {seq, id, seq, true}; }
LaunchMarkers::Marker end(uint64_t seq, uint64_t begin_seq, uint64_t id) {
  return {seq, id, begin_seq, false};
}

Decision assign(const LaunchBrackets& b, uint32_t corr, uint64_t* id, bool best = false) {
  *id = 0;
  return b.assign(corr, id, best);
}

TEST(LaunchBrackets, AnActivityBetweenARegionsMarkersIsTheRegions) {
  LaunchBrackets b;
  b.add_marker(10, begin(1, 0xA), 1);
  b.add_marker(20, end(2, 1, 0xA), 1);
  b.add_marker(30, begin(3, 0xB), 1);
  uint64_t id = 0;
  EXPECT_EQ(assign(b, 15, &id), Decision::kInside);
  EXPECT_EQ(id, 0xAu);
  EXPECT_EQ(assign(b, 25, &id), Decision::kOutside);
  EXPECT_EQ(assign(b, 5, &id), Decision::kOutside);
  EXPECT_EQ(b.stats().brackets_closed, 1u);
}

TEST(LaunchBrackets, TheInnermostBracketWins) {
  // A backward region holding an NCCL launch: the NCCL kernel is the operation's.
  LaunchBrackets b;
  b.add_marker(10, begin(1, 0xB0), 1);     // backward begins
  b.add_marker(20, begin(2, 0x1CC), 1);    // NCCL launch begins (another thread)
  b.add_marker(22, end(3, 2, 0x1CC), 1);
  b.add_marker(40, end(4, 1, 0xB0), 1);
  uint64_t id = 0;
  EXPECT_EQ(assign(b, 21, &id), Decision::kInside);
  EXPECT_EQ(id, 0x1CCu);
  EXPECT_EQ(assign(b, 30, &id), Decision::kInside);
  EXPECT_EQ(id, 0xB0u) << "after the inner bracket closed, the outer one holds";
  EXPECT_EQ(assign(b, 15, &id), Decision::kInside);
  EXPECT_EQ(id, 0xB0u);
}

TEST(LaunchBrackets, UndecidedUntilAMarkerLaunchedAfterItIsSeen) {
  LaunchBrackets b;
  uint64_t id = 0;
  EXPECT_EQ(assign(b, 5, &id), Decision::kUndecided) << "no marker seen at all";
  b.add_marker(10, begin(1, 0xA), 1);
  EXPECT_EQ(assign(b, 12, &id), Decision::kUndecided) << "an inner region may begin before it";
  EXPECT_EQ(assign(b, 12, &id, /*best=*/true), Decision::kInside) << "held long enough";
  EXPECT_EQ(id, 0xAu);
  b.add_marker(14, end(2, 1, 0xA), 1);
  EXPECT_EQ(assign(b, 12, &id), Decision::kInside);
  EXPECT_EQ(id, 0xAu);
}

TEST(LaunchBrackets, AnEndSeenBeforeItsBeginStillCloses) {
  LaunchBrackets b;
  b.add_marker(20, end(2, 1, 0xA), 1);
  b.add_marker(10, begin(1, 0xA), 1);
  uint64_t id = 0;
  EXPECT_EQ(assign(b, 15, &id), Decision::kInside);
  EXPECT_EQ(assign(b, 19, &id), Decision::kInside);
  b.add_marker(30, begin(3, 0xC), 1);
  EXPECT_EQ(assign(b, 25, &id), Decision::kOutside);
}

TEST(LaunchBrackets, OldBracketsArePrunedAndAnUnendedOneExpires) {
  LaunchBrackets::Options o;
  o.keep_closed_windows = 2;
  o.open_limit_windows = 5;
  LaunchBrackets b(o);
  b.add_marker(10, begin(1, 0xA), 1);
  b.add_marker(20, end(2, 1, 0xA), 1);
  b.add_marker(30, begin(3, 0xB), 1);  // its end marker is lost
  b.prune(3);
  EXPECT_EQ(b.size(), 2u);
  b.prune(4);
  EXPECT_EQ(b.size(), 1u) << "the closed bracket is gone after its keep time";
  b.prune(7);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.stats().open_expired, 1u);
}

TEST(LaunchBrackets, ClearForgetsEverything) {
  LaunchBrackets b;
  b.add_marker(10, begin(1, 0xA), 1);
  b.clear();
  uint64_t id = 0;
  EXPECT_EQ(assign(b, 12, &id), Decision::kUndecided);
  EXPECT_EQ(b.size(), 0u);
}

TEST(LaunchBrackets, ACorrelationCounterWrapStartsOver) {
  LaunchBrackets b;
  b.add_marker(4'000'000'000u, begin(1, 0xA), 1);
  b.add_marker(5, begin(2, 0xB), 1);
  EXPECT_EQ(b.stats().correlation_wraps, 1u);
  EXPECT_EQ(b.size(), 1u);
}

}  // namespace
}  // namespace sp::cupti
