#include "lane_batch.h"

#include <algorithm>
#include <limits>

namespace sp::online {

template <int L>
void LaneBatch::pass(const ReplayPlan& plan, const PlanValues& values, const Selection* lanes,
                     int count, double* step_times) {
  ++passes_;
  const size_t n = plan.num_positions();
  const size_t world = plan.start_at.size();
  const size_t types = values.num_types + 1;
  // Lanes past `count` repeat the last one (their results are dropped).
  rank_code_.resize(world * L);
  type_code_.resize(types * L);
  for (int l = 0; l < L; ++l) {
    const Selection& s = lanes[std::min(l, count - 1)];
    for (size_t r = 0; r < world; ++r) {
      rank_code_[r * L + l] = static_cast<uint8_t>((s.rank_real[r] != 0 ? 1 : 0) | (s.rank_delay[r] << 1));
    }
    for (size_t t = 0; t < types; ++t) type_code_[t * L + l] = s.type_real[t] != 0 ? 1 : 0;
  }
  end_.resize(n * L);
  const int32_t* unit_begin = plan.unit_begin.data();
  const int32_t* dep_begin = plan.dep_begin.data();
  const int32_t* deps = plan.deps.data();
  double* end = end_.data();
  const size_t units = plan.num_units();
  for (size_t u = 0; u < units; ++u) {
    const int32_t b = unit_begin[u], e = unit_begin[u + 1];
    double latest[L];
    std::fill(latest, latest + L, -std::numeric_limits<double>::infinity());
    for (int32_t p = b; p < e; ++p) {
      const uint8_t* code = rank_code_.data() + static_cast<size_t>(plan.rank_at[p]) * L;
      const double delay[3] = {values.delay[0][p], values.delay[1][p], values.delay[2][p]};
      const int32_t d0 = dep_begin[p], d1 = dep_begin[p + 1];
      double s[L];
      if (d0 == d1) {
        for (int l = 0; l < L; ++l) s[l] = delay[code[l] >> 1] + 0.0;
      } else {
        const double* first = end + static_cast<size_t>(deps[d0]) * L;
        for (int l = 0; l < L; ++l) s[l] = first[l];
        for (int32_t k = d0 + 1; k < d1; ++k) {
          const double* other = end + static_cast<size_t>(deps[k]) * L;
          for (int l = 0; l < L; ++l) s[l] = other[l] > s[l] ? other[l] : s[l];
        }
        for (int l = 0; l < L; ++l) s[l] = s[l] + delay[code[l] >> 1];
      }
      for (int l = 0; l < L; ++l) latest[l] = s[l] > latest[l] ? s[l] : latest[l];
    }
    for (int32_t p = b; p < e; ++p) {
      const uint8_t* code = rank_code_.data() + static_cast<size_t>(plan.rank_at[p]) * L;
      const uint8_t* type = type_code_.data() + static_cast<size_t>(values.type_at[p]) * L;
      const double work[2] = {values.work[0][p], values.work[1][p]};
      double* out = end + static_cast<size_t>(p) * L;
      for (int l = 0; l < L; ++l) out[l] = latest[l] + work[((code[l] | type[l]) & 1) != 0 ? 0 : 1];
    }
  }
  // Step time per lane: the longest rank's step-end marker end minus its step start (a source
  // at its offset, the same in every lane).
  double t[L] = {};
  for (size_t r = 0; r < world; ++r) {
    const auto start = static_cast<size_t>(plan.start_at[r]);
    const double offset = values.delay[0][start] + 0.0;
    const double* marker = end + static_cast<size_t>(plan.marker_at[r]) * L;
    for (int l = 0; l < L; ++l) t[l] = std::max(t[l], marker[l] - offset);
  }
  std::copy(t, t + count, step_times);
}

void LaneBatch::run(const ReplayPlan& plan, const PlanValues& values,
                    const std::vector<Selection>& lanes, std::vector<double>* step_times) {
  step_times->assign(lanes.size(), 0.0);
  size_t done = 0;
  while (done < lanes.size()) {
    const size_t left = lanes.size() - done;
    const int count = static_cast<int>(std::min<size_t>(left, 8));
    if (count > 4) {
      pass<8>(plan, values, lanes.data() + done, count, step_times->data() + done);
    } else if (count > 1) {
      pass<4>(plan, values, lanes.data() + done, count, step_times->data() + done);
    } else {
      pass<1>(plan, values, lanes.data() + done, count, step_times->data() + done);
    }
    done += static_cast<size_t>(count);
  }
}

}  // namespace sp::online
