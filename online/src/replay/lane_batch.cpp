#include "lane_batch.h"

#include <algorithm>
#include <limits>

namespace sp::online {
namespace {

bool same_side(const ValueSide& a, const ValueSide& b) { return a.real_work == b.real_work && a.delay == b.delay; }

// Two lanes' values side by side (a GCC/Clang vector: one SSE2 register), so that a lane loop
// is L / 2 operations instead of L. Each operation acts on each lane alone, with the scalar
// arithmetic (an addition, a comparison and a selection: `a > b ? a : b` is a lane's maximum
// as before), so the step times are the scalar loops' bit for bit.
using Pair = double __attribute__((vector_size(16)));

Pair load(const double* p) {
  Pair v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
void store(double* p, Pair v) { __builtin_memcpy(p, &v, sizeof v); }
Pair both(double x) { return Pair{x, x}; }

}  // namespace

template <int L, bool kOneSide>
void LaneBatch::pass(const ReplayPlan& plan, const PlanValues& values, const int32_t* class_at,
                     const Lane* lanes, int count, double* step_times) {
  static_assert(L % 2 == 0, "lanes go in pairs");
  constexpr int P = L / 2;
  const size_t n = plan.num_positions();
  // Per lane: its class, and which work (0 recorded, 1 ideal) and delay mode each side takes.
  // Lanes past `count` repeat the last one (their results are dropped).
  int32_t cls[L];
  uint8_t work_other[L], work_own[L], delay_other[L], delay_own[L];
  Pair cls_pair[P] = {};  // the classes as doubles (exact), compared with a position's in one go
  for (int l = 0; l < L; ++l) {
    const Lane& lane = lanes[std::min(l, count - 1)];
    cls[l] = lane.cls;
    cls_pair[l / 2][l % 2] = static_cast<double>(lane.cls);
    work_other[l] = lane.others.real_work ? 0 : 1;
    work_own[l] = lane.own.real_work ? 0 : 1;
    delay_other[l] = static_cast<uint8_t>(lane.others.delay);
    delay_own[l] = static_cast<uint8_t>(lane.own.delay);
  }
  // kOneSide: every lane has the same two sides (the unit scenarios' lanes: "base, but unit u
  // alt"). A lane's value is then one of two values per position, read once for all lanes.
  const double* delay_other_at = values.delay[delay_other[0]].data();
  const double* delay_own_at = values.delay[delay_own[0]].data();
  const double* work_other_at = values.work[work_other[0]].data();
  const double* work_own_at = values.work[work_own[0]].data();
  if (end_.size() < n * L) end_.resize(n * L);  // not shrunk: a later wider pass would zero it again
  const int32_t* unit_begin = plan.unit_begin.data();
  const int32_t* dep_begin = plan.dep_begin.data();
  const int32_t* deps = plan.deps.data();
  double* end = end_.data();
  const size_t units = plan.num_units();
  for (size_t u = 0; u < units; ++u) {
    const int32_t b = unit_begin[u], e = unit_begin[u + 1];
    Pair latest[P];
    for (Pair& x : latest) x = both(-std::numeric_limits<double>::infinity());
    for (int32_t p = b; p < e; ++p) {
      const int32_t c = class_at[p];
      Pair d[P];
      if constexpr (kOneSide) {
        const Pair c_pair = both(static_cast<double>(c));
        const Pair other = both(delay_other_at[p]), own = both(delay_own_at[p]);
        for (int i = 0; i < P; ++i) d[i] = c_pair == cls_pair[i] ? own : other;
      } else {
        const double delay[kDelayModes] = {values.delay[0][p], values.delay[1][p], values.delay[2][p],
                                           values.delay[3][p]};
        double by_lane[L];
        for (int l = 0; l < L; ++l) by_lane[l] = delay[c == cls[l] ? delay_own[l] : delay_other[l]];
        for (int i = 0; i < P; ++i) d[i] = load(by_lane + 2 * i);
      }
      const int32_t d0 = dep_begin[p], d1 = dep_begin[p + 1];
      Pair s[P];
      if (d0 == d1) {
        for (int i = 0; i < P; ++i) s[i] = d[i] + 0.0;
      } else {
        const double* first = end + static_cast<size_t>(deps[d0]) * L;
        for (int i = 0; i < P; ++i) s[i] = load(first + 2 * i);
        for (int32_t k = d0 + 1; k < d1; ++k) {
          const double* other = end + static_cast<size_t>(deps[k]) * L;
          for (int i = 0; i < P; ++i) {
            const Pair o = load(other + 2 * i);
            s[i] = o > s[i] ? o : s[i];
          }
        }
        for (int i = 0; i < P; ++i) s[i] = s[i] + d[i];
      }
      for (int i = 0; i < P; ++i) latest[i] = s[i] > latest[i] ? s[i] : latest[i];
    }
    for (int32_t p = b; p < e; ++p) {
      const int32_t c = class_at[p];
      double* out = end + static_cast<size_t>(p) * L;
      if constexpr (kOneSide) {
        const Pair c_pair = both(static_cast<double>(c));
        const Pair other = both(work_other_at[p]), own = both(work_own_at[p]);
        for (int i = 0; i < P; ++i) store(out + 2 * i, latest[i] + (c_pair == cls_pair[i] ? own : other));
      } else {
        const double work[2] = {values.work[0][p], values.work[1][p]};
        double by_lane[L];
        for (int l = 0; l < L; ++l) by_lane[l] = work[c == cls[l] ? work_own[l] : work_other[l]];
        for (int i = 0; i < P; ++i) store(out + 2 * i, latest[i] + load(by_lane + 2 * i));
      }
    }
  }
  // Step time per lane: the longest rank's step-end marker end minus its step start (a source
  // at its offset in that lane's delay mode).
  double t[L] = {};
  for (size_t r = 0; r < plan.start_at.size(); ++r) {
    const auto start = static_cast<size_t>(plan.start_at[r]);
    const int32_t c = class_at[start];
    const double* marker = end + static_cast<size_t>(plan.marker_at[r]) * L;
    for (int l = 0; l < L; ++l) {
      const double offset = values.delay[c == cls[l] ? delay_own[l] : delay_other[l]][start] + 0.0;
      t[l] = std::max(t[l], marker[l] - offset);
    }
  }
  std::copy(t, t + count, step_times);
}

// Lanes that share both sides replay together, the largest such set first: a batch of one
// side reads one value per position for all its lanes (pass<L, true>), and the "ideal, but op
// type t recorded" lanes are most of the base scenarios. A lane's time does not depend on the
// lanes it is batched with, so the order changes none.
void LaneBatch::order_lanes(const std::vector<Lane>& lanes) {
  side_lanes_.clear();  // per distinct pair of sides: its lanes, in order
  for (size_t i = 0; i < lanes.size(); ++i) {
    auto same = [&](const std::vector<size_t>& group) {
      const Lane& first = lanes[group.front()];
      return same_side(first.others, lanes[i].others) && same_side(first.own, lanes[i].own);
    };
    const auto it = std::find_if(side_lanes_.begin(), side_lanes_.end(), same);
    if (it != side_lanes_.end()) {
      it->push_back(i);
    } else {
      side_lanes_.push_back({i});
    }
  }
  std::stable_sort(side_lanes_.begin(), side_lanes_.end(),
                   [](const std::vector<size_t>& a, const std::vector<size_t>& b) { return a.size() > b.size(); });
  order_.clear();
  for (const std::vector<size_t>& group : side_lanes_) order_.insert(order_.end(), group.begin(), group.end());
  ordered_.clear();
  for (size_t i : order_) ordered_.push_back(lanes[i]);
}

void LaneBatch::run(const ReplayPlan& plan, const PlanValues& values,
                    const std::vector<int32_t>& class_at, const std::vector<Lane>& all_lanes,
                    std::vector<double>* step_times) {
  order_lanes(all_lanes);
  const std::vector<Lane>& lanes = ordered_;
  times_.assign(lanes.size(), 0.0);
  for (size_t done = 0; done < lanes.size();) {
    const int count = static_cast<int>(std::min<size_t>(lanes.size() - done, 8));
    const Lane* batch = lanes.data() + done;
    double* out = times_.data() + done;
    bool one_side = true;
    for (int l = 1; l < count; ++l) {
      one_side = one_side && same_side(batch[l].others, batch[0].others) && same_side(batch[l].own, batch[0].own);
    }
    if (count > 4) {
      if (one_side) {
        pass<8, true>(plan, values, class_at.data(), batch, count, out);
      } else {
        pass<8, false>(plan, values, class_at.data(), batch, count, out);
      }
    } else if (count > 1) {
      if (one_side) {
        pass<4, true>(plan, values, class_at.data(), batch, count, out);
      } else {
        pass<4, false>(plan, values, class_at.data(), batch, count, out);
      }
    } else {
      pass<2, true>(plan, values, class_at.data(), batch, count, out);  // the lane and a copy
    }
    done += static_cast<size_t>(count);
  }
  step_times->assign(lanes.size(), 0.0);
  for (size_t k = 0; k < order_.size(); ++k) (*step_times)[order_[k]] = times_[k];
}

}  // namespace sp::online
