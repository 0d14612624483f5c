// RunHealth: does the probe see anything useful in this job? It watches every closed step (its
// verdict, and for an analysed step whether any rank's summary had a collective or p2p op) and
// names what makes the analysis useless: no step could be analysed (every skip counted and
// classified by its reason), or a multi-rank job in which no communication was ever seen (the
// what-if engine then cannot tell who waits for whom). The check runs once after the first
// `check_after` steps (or at the end of a shorter run) and gives at most one warning;
// report.json's "health" section holds the counts for the whole run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

class RunHealth {
 public:
  // "Within the first steps": 5 steps are enough to see a pattern, few enough to warn early.
  static constexpr int kCheckAfter = 5;
  explicit RunHealth(int world_size, int check_after = kCheckAfter);

  // `kind`: the skip's kind ("incomplete", "malformed", "behind"...), "" for an analysed step.
  void observe(const StepVerdict& v, const std::string& kind, bool saw_comm);
  // The one warning, the first time the check runs and finds a problem; "" otherwise.
  std::string take_warning(bool at_end);
  // What makes this run's analysis useless; empty when nothing does.
  std::vector<std::string> problems(bool at_end) const;
  nlohmann::ordered_json section(bool at_end) const;

  // "malformed: collective (group 12 seq 7) has 1 of 4 members" -> "... (group N seq N) has N of
  // N members": one class per message shape, so that thousands of skips read as a few lines.
  static std::string reason_class(const std::string& reason);

 private:
  struct SkipClass {
    uint64_t count = 0;
    int64_t first_step = 0;
    std::string first_reason;
  };
  static constexpr size_t kMaxClasses = 16;

  int world_size_;
  int check_after_;
  uint64_t closed_ = 0;    // steps that reached the analysis (not dropped for falling behind)
  uint64_t analyzed_ = 0, with_comm_ = 0, behind_ = 0;
  std::map<std::string, uint64_t> by_kind_;
  std::map<std::string, SkipClass> by_class_;
  bool checked_ = false;
};

}  // namespace sp::online
