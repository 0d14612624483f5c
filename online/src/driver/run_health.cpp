#include "run_health.h"

#include <algorithm>
#include <cctype>

namespace sp::online {
namespace {

using json = nlohmann::ordered_json;

constexpr size_t kMaxClassLength = 160;

// The most frequent classes first: "40 x malformed: collective (...)".
std::vector<std::pair<std::string, uint64_t>> ranked(const std::map<std::string, uint64_t>& counts) {
  std::vector<std::pair<std::string, uint64_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

RunHealth::RunHealth(int world_size, int check_after)
    : world_size_(std::max(1, world_size)), check_after_(std::max(1, check_after)) {}

std::string RunHealth::reason_class(const std::string& reason) {
  std::string out;
  bool in_number = false;
  for (char c : reason) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (!in_number) out += 'N';
      in_number = true;
      continue;
    }
    in_number = false;
    out += c;
    if (out.size() >= kMaxClassLength) break;
  }
  return out;
}

void RunHealth::observe(const StepVerdict& v, const std::string& kind, bool saw_comm) {
  if (kind == "behind") {  // a budget decision, not a sign that the probe sees nothing
    ++behind_;
    ++by_kind_[kind];
    return;
  }
  ++closed_;
  if (v.analyzed) {
    ++analyzed_;
    with_comm_ += saw_comm ? 1 : 0;
    return;
  }
  ++by_kind_[kind.empty() ? "other" : kind];
  std::string cls = reason_class(v.skip_reason);
  if (by_class_.size() >= kMaxClasses && !by_class_.count(cls)) cls = "other reasons";
  SkipClass& c = by_class_[cls];
  if (c.count++ == 0) {
    c.first_step = v.step;
    c.first_reason = v.skip_reason;
  }
}

std::vector<std::string> RunHealth::problems(bool at_end) const {
  std::vector<std::string> out;
  if (closed_ == 0) {
    if (at_end) out.push_back("no step reached rank 0's analysis");
    return out;
  }
  if (analyzed_ == 0) {
    std::string why = "none of the " + std::to_string(closed_) + " steps could be analysed";
    std::map<std::string, uint64_t> counts;
    for (const auto& [cls, c] : by_class_) counts[cls] = c.count;
    const auto top = ranked(counts);
    for (size_t i = 0; i < top.size() && i < 3; ++i) {
      const SkipClass& c = by_class_.at(top[i].first);
      why += (i ? "; " : ": ") + std::to_string(c.count) + " x \"" + c.first_reason + "\"";
      if (c.count > 1) why += " (first: step " + std::to_string(c.first_step) + ")";
    }
    out.push_back(why);
  } else if (world_size_ > 1 && with_comm_ == 0) {
    out.push_back("no collective or point-to-point operation was seen in any of the " +
                  std::to_string(analyzed_) + " analysed steps of this " +
                  std::to_string(world_size_) +
                  "-rank job, so the analysis cannot tell which rank the others waited for");
  }
  return out;
}

std::string RunHealth::take_warning(bool at_end) {
  if (checked_) return {};
  if (!at_end && closed_ < static_cast<uint64_t>(check_after_)) return {};
  checked_ = true;
  const std::vector<std::string> found = problems(at_end);
  if (found.empty() || closed_ == 0) return {};  // nothing at all reached the analysis: report only
  return "the probe sees nothing useful in this job: " + found.front() +
         " (report.json's \"health\" section counts every skip by its reason)";
}

json RunHealth::section(bool at_end) const {
  const std::vector<std::string> found = problems(at_end);
  json classes = json::array();
  std::map<std::string, uint64_t> counts;
  for (const auto& [cls, c] : by_class_) counts[cls] = c.count;
  for (const auto& [cls, n] : ranked(counts)) {
    const SkipClass& c = by_class_.at(cls);
    classes.push_back({{"reason", cls}, {"count", n}, {"first_step", c.first_step}, {"first", c.first_reason}});
  }
  uint64_t skipped = behind_;
  for (const auto& [cls, c] : by_class_) skipped += c.count;
  return {{"useful", found.empty()},
          {"problems", found},
          {"steps_closed", closed_ + behind_},
          {"steps_analyzed", analyzed_},
          {"steps_with_communication", with_comm_},
          {"skipped", {{"total", skipped}, {"by_kind", by_kind_}, {"by_reason", classes}}}};
}

}  // namespace sp::online
