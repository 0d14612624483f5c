// The timeline's layout. Events are bucketed by (pid, stream) with a counting sort and only
// sorted by start within a bucket: SE draws 214k events, 4096 GPUs about a million, and one
// global sort of them cost more than writing them out.
#include "timeline_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace sp::whatif::detail {
namespace {

struct StepWindow {
  double begin = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  double shift = 0;  // added to every time of the step
};

// Rows, windows and per-row times, with the input checks.
class TimeSource {
 public:
  explicit TimeSource(const TimelineInput& in) : in_(in), t_(*in.trace) {
    if (with_ideal() && (in.ideal_start.size() != t_.size() || in.ideal_end.size() != t_.size())) {
      throw std::invalid_argument("write_timeline_json: ideal times must have one entry per trace row");
    }
    if (!in.real_start.empty() && (in.real_start.size() != t_.size() || in.real_end.size() != t_.size())) {
      throw std::invalid_argument("write_timeline_json: real times must have one entry per trace row");
    }
  }
  bool with_ideal() const { return !in_.ideal_start.empty(); }
  double start(int copy, size_t i) const {
    if (copy == 1) return in_.ideal_start[i];
    return in_.real_start.empty() ? t_.start_ts[i] : in_.real_start[i];
  }
  double end(int copy, size_t i) const {
    if (copy == 1) return in_.ideal_end[i];
    return in_.real_start.empty() ? t_.start_ts[i] + t_.duration[i] : in_.real_end[i];
  }
  bool present(int copy, size_t i) const {
    return copy == 0 || (with_ideal() && !std::isnan(in_.ideal_start[i]) && !std::isnan(in_.ideal_end[i]));
  }

 private:
  const TimelineInput& in_;
  const TraceTable& t_;
};

// Lays steps end to end: each starts where the previous window ended plus a 10% gap.
std::map<int64_t, StepWindow> step_windows(const TimelineInput& in, const TimeSource& times) {
  const TraceTable& t = *in.trace;
  std::map<int64_t, StepWindow> windows;  // ordered: the layout follows step order
  for (const int64_t s : in.steps) windows[s];
  auto it = windows.end();
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 0 || t.step[i] != t.step[i - 1]) {  // rows come in runs of a step: one lookup per run
      it = in.steps.empty() ? windows.try_emplace(t.step[i]).first : windows.find(t.step[i]);
    }
    if (it == windows.end()) continue;
    for (int copy = 0; copy < 2; ++copy) {
      if (!times.present(copy, i)) continue;
      it->second.begin = std::min(it->second.begin, times.start(copy, i));
      it->second.end = std::max(it->second.end, times.end(copy, i));
    }
  }
  double cursor = 0;
  for (auto& [step, w] : windows) {
    if (w.begin > w.end) continue;  // a requested step without rows
    w.shift = cursor - w.begin;
    cursor += (w.end - w.begin) * 1.1;
  }
  return windows;
}

// The shift of each row's step; NaN for rows of steps not drawn.
std::vector<double> row_shifts(const TraceTable& t, const std::map<int64_t, StepWindow>& windows) {
  std::vector<double> shift(t.size(), std::numeric_limits<double>::quiet_NaN());
  auto w = windows.end();
  for (size_t i = 0; i < t.size(); ++i) {
    if (w == windows.end() || w->first != t.step[i]) w = windows.find(t.step[i]);  // rows come in runs of a step
    if (w != windows.end()) shift[i] = w->second.shift;
  }
  return shift;
}

// Greedy lanes within one (pid, stream) bucket, already in start order; returns lanes used.
uint8_t assign_lanes(TimelineEvent* begin, TimelineEvent* end) {
  int64_t lane_end[kMaxTimelineLanes];
  int used = 0;
  for (TimelineEvent* ev = begin; ev != end; ++ev) {
    int lane = 0;
    while (lane < used && lane_end[lane] > ev->start_ns) ++lane;
    if (lane < used) {
      lane_end[lane] = ev->end_ns;  // the lane was free: its end <= this start <= this end
    } else if (used < kMaxTimelineLanes) {
      lane_end[used++] = ev->end_ns;
    } else {
      lane = kMaxTimelineLanes - 1;  // pathological overlap: share the last lane
      lane_end[lane] = std::max(lane_end[lane], ev->end_ns);
    }
    ev->lane = static_cast<uint8_t>(lane);
  }
  return static_cast<uint8_t>(used);
}

}  // namespace

TimelineLayout lay_out_timeline(const TimelineInput& in) {
  if (!in.trace || !in.meta) throw std::invalid_argument("write_timeline_json: trace and meta are required");
  const TraceTable& t = *in.trace;
  if (t.size() > std::numeric_limits<uint32_t>::max()) throw std::invalid_argument("write_timeline_json: too many rows");
  const TimeSource times(in);
  const std::vector<double> shift = row_shifts(t, step_windows(in, times));
  const int32_t world = in.meta->world_size;
  const auto bucket_of = [](int32_t pid, int stream) { return static_cast<size_t>(pid) * kNumTimelineStreams + stream; };

  TimelineLayout layout;
  layout.with_ideal = times.with_ideal();
  const size_t num_buckets = bucket_of(2 * world, 0);
  std::vector<uint32_t> bucket_start(num_buckets + 1, 0);
  std::vector<uint8_t> place_known(static_cast<size_t>(world), 0);
  for (size_t i = 0; i < t.size(); ++i) {
    if (std::isnan(shift[i])) continue;
    if (t.rank[i] < 0 || t.rank[i] >= world) {
      throw std::invalid_argument("write_timeline_json: rank " + std::to_string(t.rank[i]) + " is outside the world size");
    }
    if (!place_known[static_cast<size_t>(t.rank[i])]) {
      place_known[static_cast<size_t>(t.rank[i])] = 1;
      layout.ranks.push_back({t.rank[i], t.dp_rank[i], t.stage[i]});
    }
    for (int copy = 0; copy < 2; ++copy) {
      if (times.present(copy, i)) ++bucket_start[bucket_of(copy * world + t.rank[i], timeline_stream(t.optype[i])) + 1];
    }
  }
  std::sort(layout.ranks.begin(), layout.ranks.end(),
            [](const TimelineProcess& a, const TimelineProcess& b) { return a.rank < b.rank; });
  for (size_t b = 0; b < num_buckets; ++b) bucket_start[b + 1] += bucket_start[b];

  layout.events.resize(bucket_start[num_buckets]);
  std::vector<uint32_t> next(bucket_start.begin(), bucket_start.end() - 1);
  for (size_t i = 0; i < t.size(); ++i) {
    if (std::isnan(shift[i])) continue;
    const int stream = timeline_stream(t.optype[i]);
    for (int copy = 0; copy < 2; ++copy) {
      if (!times.present(copy, i)) continue;
      const int32_t pid = copy * world + t.rank[i];
      const auto start_ns = std::llround((times.start(copy, i) + shift[i]) * 1e9);
      const auto end_ns = std::llround((times.end(copy, i) + shift[i]) * 1e9);
      layout.events[next[bucket_of(pid, stream)]++] = {static_cast<uint32_t>(i), pid, static_cast<uint8_t>(stream), 0,
                                                       start_ns, std::max(end_ns, start_ns)};
    }
  }
  layout.lanes_used.assign(num_buckets, 0);
  for (size_t b = 0; b < num_buckets; ++b) {
    TimelineEvent* begin = layout.events.data() + bucket_start[b];
    TimelineEvent* end = layout.events.data() + bucket_start[b + 1];
    if (begin == end) continue;
    std::sort(begin, end, [](const TimelineEvent& x, const TimelineEvent& y) {
      return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.row < y.row;
    });
    layout.lanes_used[b] = assign_lanes(begin, end);
  }
  return layout;
}

}  // namespace sp::whatif::detail
