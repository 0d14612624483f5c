// --steps parsing: single steps, ranges, commas, order and repeats, and its errors.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/step_selection.h"

namespace sp::cli {
namespace {

using Steps = std::vector<int64_t>;

TEST(StepSelection, ExpandsStepsAndRanges) {
  EXPECT_EQ(parse_step_selection({"12", "20-23"}), (Steps{12, 20, 21, 22, 23}));
  EXPECT_EQ(parse_step_selection({"30,5-6", "5"}), (Steps{5, 6, 30}));
  EXPECT_EQ(parse_step_selection({"7-7"}), (Steps{7}));
}

TEST(StepSelection, RejectsMalformedTokens) {
  for (const std::string bad : {"", "x", "-3", "3-", "5-2", "1.5", "2--3", "1,,2", "0-2000000"}) {
    try {
      parse_step_selection({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("is not a step or a range of steps"), std::string::npos) << e.what();
    }
  }
}

TEST(StepSelection, PicksAvailableStepsAndNamesTheOption) {
  const std::set<int64_t> available = {23, 25, 33};
  EXPECT_EQ(pick_steps("--steps", {"20-25"}, available), (Steps{23, 25}));  // 20-22, 24 warned about
  try {
    pick_steps("--timeline-steps", {"1-3"}, available);
    ADD_FAILURE() << "accepted a selection with no available step";
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "--timeline-steps: none of the selected steps is available (steps 23 to 33 are)");
  }
  try {
    pick_steps("--timeline-steps", {"x"}, available);
    ADD_FAILURE() << "accepted 'x'";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--timeline-steps: 'x' is not a step", 0), 0u) << e.what();
  }
}

TEST(StepSelection, DefaultTimelineStepsStayWithinTheEventBudget) {
  whatif::TraceTable t;
  // Step 1: 300k rows, step 2: 300k rows, step 3: 1 row. Drawn twice: 600k + 600k + 2 events.
  for (int64_t step : {1, 2}) {
    for (int i = 0; i < 300000; ++i) t.push_back(0, 0, 0, step, whatif::OpType::kGc, 0, 0, i, -1, -1, -1);
  }
  t.push_back(0, 0, 0, 3, whatif::OpType::kGc, 0, 0, 0, -1, -1, -1);
  EXPECT_EQ(default_timeline_steps(t, {1, 2, 3}), (Steps{1}));
  EXPECT_EQ(default_timeline_steps(t, {2, 3}), (Steps{2, 3}));
  // A single step over the budget is still drawn: an empty timeline helps nobody.
  EXPECT_EQ(default_timeline_steps(t, {1}), (Steps{1}));
}

TEST(StepSelection, DefaultTimelineStepsCanPreferTheSlowestSteps) {
  whatif::TraceTable t;
  // Steps 1 to 4, 10 rows each: 20 events per step drawn (real and ideal).
  for (int64_t step : {1, 2, 3, 4}) {
    for (int i = 0; i < 10; ++i) t.push_back(0, 0, 0, step, whatif::OpType::kGc, 0, 0, i, -1, -1, -1);
  }
  // Slowest first: 3, 1, 4, 2. A budget of 50 events holds two steps, returned in step order.
  EXPECT_EQ(default_timeline_steps(t, {1, 2, 3, 4}, 50, {3, 1, 4, 2}), (Steps{1, 3}));
  // Everything fits: every analysed step.
  EXPECT_EQ(default_timeline_steps(t, {1, 2, 3, 4}, 80, {3, 1, 4, 2}), (Steps{1, 2, 3, 4}));
  // Not even the slowest fits: it is drawn alone.
  EXPECT_EQ(default_timeline_steps(t, {1, 2, 3, 4}, 10, {3, 1, 4, 2}), (Steps{3}));
}

}  // namespace
}  // namespace sp::cli
