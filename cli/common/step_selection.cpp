// Parsing and checking of step selections.
#include "step_selection.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include <spdlog/spdlog.h>

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

std::string step_list(const std::vector<int64_t>& steps) {
  std::string list;
  for (size_t i = 0; i < steps.size() && i < 20; ++i) list += (i ? ", " : "") + std::to_string(steps[i]);
  if (steps.size() > 20) list += ", ...";
  return list;
}

}  // namespace

std::vector<int64_t> parse_step_selection(const std::vector<std::string>& tokens, const std::string& option) {
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
        throw BadInput(option + ": '" + std::string(item) +
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

std::set<int64_t> distinct_steps(const whatif::TraceTable& trace) {
  std::set<int64_t> steps;
  for (size_t i = 0; i < trace.step.size(); ++i) {
    if (i == 0 || trace.step[i] != trace.step[i - 1]) steps.insert(trace.step[i]);  // once per run of a step
  }
  return steps;
}

std::vector<int64_t> pick_steps(const std::string& option, const std::vector<std::string>& tokens,
                                const std::set<int64_t>& available) {
  const std::vector<int64_t> wanted = parse_step_selection(tokens, option);
  std::vector<int64_t> kept, missing;
  for (const int64_t s : wanted) (available.count(s) ? kept : missing).push_back(s);
  if (kept.empty()) {
    throw BadInput(option + ": none of the selected steps is available (steps " + std::to_string(*available.begin()) +
                   " to " + std::to_string(*available.rbegin()) + " are)");
  }
  if (!missing.empty()) {
    spdlog::warn("{}: {} selected step(s) not available, ignored: {}", option, missing.size(), step_list(missing));
  }
  return kept;
}

std::vector<int64_t> default_timeline_steps(const whatif::TraceTable& trace, const std::vector<int64_t>& analysed,
                                            size_t budget, const std::vector<int64_t>& preference) {
  std::map<int64_t, size_t> rows;
  for (const int64_t s : analysed) rows[s] = 0;
  // Rows come in runs of one step: look a step up once per run, not once per row.
  for (size_t i = 0; i < trace.step.size();) {
    const int64_t s = trace.step[i];
    size_t run = 1;
    while (i + run < trace.step.size() && trace.step[i + run] == s) ++run;
    if (const auto it = rows.find(s); it != rows.end()) it->second += run;
    i += run;
  }
  const std::vector<int64_t>& order = preference.empty() ? analysed : preference;
  std::vector<int64_t> kept;
  size_t events = 0;
  for (const int64_t step : order) {
    const auto it = rows.find(step);
    if (it == rows.end()) continue;
    if (!kept.empty() && events + 2 * it->second > budget) break;
    events += 2 * it->second;
    kept.push_back(step);
  }
  std::sort(kept.begin(), kept.end());
  if (kept.size() < rows.size()) {
    if (preference.empty()) {
      spdlog::warn("timeline.json shows the first {} of {} analysed steps ({} to {}) to stay within {} events; "
                   "choose others with --timeline-steps",
                   kept.size(), rows.size(), kept.front(), kept.back(), budget);
    } else {
      spdlog::warn("timeline.json shows the {} slowest of {} analysed steps ({}) to stay within {} events; "
                   "choose others with --timeline-steps",
                   kept.size(), rows.size(), step_list(kept), budget);
    }
  }
  return kept;
}

}  // namespace sp::cli
