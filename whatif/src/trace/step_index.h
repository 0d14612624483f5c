// Internal: the distinct steps of a trace, ascending, and a fast step -> index lookup (a dense
// table when the step numbers span a moderate range, binary search otherwise).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace sp::whatif {

class StepIndex {
 public:
  explicit StepIndex(std::span<const int64_t> step_of_row) {
    if (step_of_row.empty()) return;
    const auto [lo, hi] = std::minmax_element(step_of_row.begin(), step_of_row.end());
    min_ = *lo;
    const auto range = static_cast<uint64_t>(*hi - *lo) + 1;
    if (range <= (uint64_t{1} << 24)) {
      dense_.assign(range, -1);
      for (int64_t s : step_of_row) dense_[static_cast<size_t>(s - min_)] = 0;
      for (size_t i = 0; i < range; ++i) {
        if (dense_[i] == 0) {
          dense_[i] = static_cast<int32_t>(steps_.size());
          steps_.push_back(min_ + static_cast<int64_t>(i));
        }
      }
    } else {
      steps_.assign(step_of_row.begin(), step_of_row.end());
      std::sort(steps_.begin(), steps_.end());
      steps_.erase(std::unique(steps_.begin(), steps_.end()), steps_.end());
    }
  }

  const std::vector<int64_t>& steps() const { return steps_; }

  // Index of a step that occurs in the trace.
  size_t operator()(int64_t step) const {
    if (!dense_.empty()) return static_cast<size_t>(dense_[static_cast<size_t>(step - min_)]);
    return static_cast<size_t>(std::lower_bound(steps_.begin(), steps_.end(), step) - steps_.begin());
  }

 private:
  int64_t min_ = 0;
  std::vector<int32_t> dense_;
  std::vector<int64_t> steps_;
};

}  // namespace sp::whatif
