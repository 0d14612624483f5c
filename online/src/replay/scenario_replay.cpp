#include "scenario_replay.h"

#include <algorithm>
#include <limits>

namespace sp::online {

namespace {

// Whether every position takes one work side (*real: recorded) and one delay mode (*mode)
// under `s`: the real, ideal and null replays, whose per-position choice then needs no lookups.
bool uniform(const Selection& s, bool* real, uint8_t* mode) {
  if (s.rank_delay.empty() || s.type_real.empty()) return false;
  *mode = s.rank_delay.front();
  if (std::any_of(s.rank_delay.begin(), s.rank_delay.end(), [&](uint8_t d) { return d != *mode; })) return false;
  if (std::all_of(s.rank_real.begin(), s.rank_real.end(), [](uint8_t r) { return r != 0; })) {
    *real = true;
    return true;
  }
  if (std::any_of(s.rank_real.begin(), s.rank_real.end(), [](uint8_t r) { return r != 0; })) return false;
  *real = s.type_real.front() != 0;  // no rank's choice: the types decide
  return std::all_of(s.type_real.begin(), s.type_real.end(), [&](uint8_t t) { return (t != 0) == *real; });
}

// kUniform: every position takes work_side's work and delay_side's delay (uniform() holds).
template <bool kUniform>
void replay(const ReplayPlan& plan, const PlanValues& values, const Selection& selection, const double* work_side,
            const double* delay_side, double* start, double* end) {
  const int32_t* unit_begin = plan.unit_begin.data();
  const int32_t* dep_begin = plan.dep_begin.data();
  const int32_t* deps = plan.deps.data();
  const int32_t* rank_at = plan.rank_at.data();
  const int32_t* type_at = values.type_at.data();
  const uint8_t* type_real = selection.type_real.data();
  const uint8_t* rank_real = selection.rank_real.data();
  const uint8_t* rank_delay = selection.rank_delay.data();
  const double* work[2] = {values.work[0].data(), values.work[1].data()};
  const double* delay[kDelayModes] = {values.delay[0].data(), values.delay[1].data(),
                                      values.delay[2].data(), values.delay[3].data()};
  const size_t units = plan.num_units();
  for (size_t u = 0; u < units; ++u) {
    const int32_t b = unit_begin[u], e = unit_begin[u + 1];
    // The engine's arithmetic (simulator.cpp): start = max(ends of deps) + delay, a source at
    // its delay; a unit's members end at their latest start + their own work.
    double latest = -std::numeric_limits<double>::infinity();
    for (int32_t p = b; p < e; ++p) {
      const double d = kUniform ? delay_side[p] : delay[rank_delay[rank_at[p]]][p];
      const int32_t d0 = dep_begin[p], d1 = dep_begin[p + 1];
      double s;
      if (d0 == d1) {
        s = d + 0.0;
      } else {
        s = end[deps[d0]];
        for (int32_t k = d0 + 1; k < d1; ++k) s = end[deps[k]] > s ? end[deps[k]] : s;
        s = s + d;
      }
      start[p] = s;
      latest = s > latest ? s : latest;
    }
    for (int32_t p = b; p < e; ++p) {
      if constexpr (kUniform) {
        end[p] = latest + work_side[p];
      } else {
        const bool real = (type_real[type_at[p]] | rank_real[rank_at[p]]) != 0;
        end[p] = latest + work[real ? 0 : 1][p];
      }
    }
  }
}

}  // namespace

double ScenarioReplay::run(const ReplayPlan& plan, const PlanValues& values,
                           const Selection& selection) {
  const size_t n = plan.num_positions();
  start_.resize(n);
  end_.resize(n);
  bool real = false;
  uint8_t mode = 0;
  if (uniform(selection, &real, &mode)) {
    replay<true>(plan, values, selection, values.work[real ? 0 : 1].data(), values.delay[mode].data(), start_.data(),
                 end_.data());
  } else {
    replay<false>(plan, values, selection, nullptr, nullptr, start_.data(), end_.data());
  }
  return replay_step_time(plan, start_, end_);
}

double replay_step_time(const ReplayPlan& plan, const std::vector<double>& start,
                        const std::vector<double>& end) {
  double t = 0;
  for (size_t r = 0; r < plan.marker_at.size(); ++r) {
    t = std::max(t, end[static_cast<size_t>(plan.marker_at[r])] - start[static_cast<size_t>(plan.start_at[r])]);
  }
  return t;
}

}  // namespace sp::online
