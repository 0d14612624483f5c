// Interned names: stable ids, bounded, and summaries carry only the names they use.
#include <gtest/gtest.h>

#include <string>

#include "capture/name_table.h"

namespace sp::runtime {
namespace {

TEST(NameTable, IdsAreStableAndDistinct) {
  NameTable t;
  NameTable::InternError e{};
  const uint32_t fwd = t.intern("forward", &e);
  const uint32_t bwd = t.intern("backward", &e);
  EXPECT_NE(fwd, 0u);
  EXPECT_NE(bwd, 0u);
  EXPECT_NE(fwd, bwd);
  EXPECT_EQ(t.intern("forward", &e), fwd);
  EXPECT_EQ(t.size(), 2u);
}

TEST(NameTable, RejectsEmptyAndOverlongNames) {
  NameTable t;
  NameTable::InternError e{};
  EXPECT_EQ(t.intern("", &e), 0u);
  EXPECT_EQ(e, NameTable::InternError::kEmpty);
  EXPECT_EQ(t.intern(std::string(kMaxNameLength + 1, 'x'), &e), 0u);
  EXPECT_EQ(e, NameTable::InternError::kTooLong);
  EXPECT_NE(t.intern(std::string(kMaxNameLength, 'x'), &e), 0u);
}

TEST(NameTable, IsBounded) {
  NameTable t;
  NameTable::InternError e{};
  for (uint32_t i = 0; i + 1 < kMaxNames; ++i) ASSERT_NE(t.intern(std::to_string(i), &e), 0u);
  EXPECT_EQ(t.intern("one-too-many", &e), 0u);
  EXPECT_EQ(e, NameTable::InternError::kFull);
  EXPECT_NE(t.intern("7", &e), 0u);  // existing names still resolve
}

TEST(NameTable, LocalizeKeepsOnlyUsedNamesDenselyNumbered) {
  NameTable t;
  NameTable::InternError e{};
  const uint32_t a = t.intern("a", &e);
  t.intern("unused", &e);
  const uint32_t c = t.intern("c", &e);
  StepSummary s;
  for (uint32_t id : {c, 0u, a, c, 9999u}) {
    sp_event ev{};
    ev.name_id = id;
    s.ops.push_back(ev);
  }
  t.localize(&s);
  EXPECT_EQ(s.names, (std::vector<std::string>{"", "c", "a"}));
  std::vector<uint32_t> ids;
  for (const auto& op : s.ops) ids.push_back(op.name_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 0, 2, 1, 0}));
}

}  // namespace
}  // namespace sp::runtime
