// Test helper: a generated trace's rows grouped by (step, worker), each group in start order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif::testing {

struct TraceView {
  // (step, dp_rank, stage) -> row indices sorted by (start_ts, row).
  std::map<std::tuple<int64_t, int32_t, int32_t>, std::vector<size_t>> by_worker;

  explicit TraceView(const TraceTable& t) {
    for (size_t i = 0; i < t.size(); ++i) by_worker[{t.step[i], t.dp_rank[i], t.stage[i]}].push_back(i);
    for (auto& [key, rows] : by_worker) {
      std::stable_sort(rows.begin(), rows.end(),
                       [&](size_t a, size_t b) { return t.start_ts[a] < t.start_ts[b]; });
    }
  }

  static std::vector<size_t> of_type(const TraceTable& t, const std::vector<size_t>& rows,
                                     OpType type) {
    std::vector<size_t> out;
    for (size_t r : rows) {
      if (t.optype[r] == type) out.push_back(r);
    }
    return out;
  }
};

inline double end_of(const TraceTable& t, size_t row) { return t.start_ts[row] + t.duration[row]; }

}  // namespace sp::whatif::testing
