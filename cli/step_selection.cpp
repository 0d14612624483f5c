// Parsing of the --steps option.
#include "step_selection.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "exit_codes.h"

namespace sp::cli {
namespace {

bool parse_step(std::string_view s, int64_t& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && v >= 0;
}

// A range wider than this is surely a typo (no trace has a million steps) and would make a
// huge list.
constexpr int64_t kMaxRange = 1'000'000;

}  // namespace

std::vector<int64_t> parse_step_selection(const std::vector<std::string>& tokens) {
  std::vector<int64_t> steps;
  for (const std::string& token : tokens) {
    std::string_view rest = token;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const size_t dash = item.find('-');
      int64_t lo = 0, hi = 0;
      const bool ok = dash == std::string_view::npos
                          ? parse_step(item, lo) && (hi = lo, true)
                          : parse_step(item.substr(0, dash), lo) && parse_step(item.substr(dash + 1), hi) && lo <= hi;
      if (!ok || hi - lo > kMaxRange) {
        throw BadInput("--steps: '" + std::string(item) +
                       "' is not a step or a range of steps (e.g. 12 or 20-23, first <= last)");
      }
      for (int64_t s = lo; s <= hi; ++s) steps.push_back(s);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

}  // namespace sp::cli
