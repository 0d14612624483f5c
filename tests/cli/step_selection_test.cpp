// --steps parsing: single steps, ranges, commas, order and repeats, and its errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exit_codes.h"
#include "step_selection.h"

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

}  // namespace
}  // namespace sp::cli
