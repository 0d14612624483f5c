// Chrome trace writer. Events are formatted by hand (fixed names, integer nanoseconds):
// SE's 2 x 107k events go out in a fraction of a second, where a DOM-building JSON library
// would hold the whole document in memory first.
#include "straggler_probe/whatif/report_timeline.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sp::whatif {

int timeline_stream(OpType t) {
  switch (t) {
    case OpType::kForwardCompute:
    case OpType::kBackwardCompute:
    case OpType::kOptimizer:
    case OpType::kGc: return 0;
    case OpType::kForwardSend:
    case OpType::kBackwardSend: return 1;
    case OpType::kForwardRecv:
    case OpType::kBackwardRecv: return 2;
    case OpType::kParamsAllGather:
    case OpType::kGradsReduceScatter:
    case OpType::kSeparateGradsAllReduce: return 3;
    case OpType::kLayernormGradsAllReduce:
    case OpType::kEmbeddingGradsAllReduce:
    case OpType::kOptimizerClipMainGrad: return 4;
  }
  return 0;
}

namespace {

// Ops that overlap on one stream (traces have them: a forward kernel still running when the
// next backward starts) would break Perfetto's nesting of slices on a thread, so such an op
// moves to an extra lane of its stream: tid = stream + kNumTimelineStreams * lane.
constexpr int kMaxLanes = 16;

struct Event {
  size_t row;
  int64_t pid;
  int stream;
  int lane = 0;
  int64_t start_ns, end_ns;  // integer nanoseconds: touching ops stay exactly touching
};

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
  for (size_t i = 0; i < t.size(); ++i) {
    auto it = in.steps.empty() ? windows.try_emplace(t.step[i]).first : windows.find(t.step[i]);
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

// Greedy lane assignment per (pid, stream); returns the lanes used per (pid, stream).
std::map<std::pair<int64_t, int>, int> assign_lanes(std::vector<Event>& events) {
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.row < b.row;
  });
  std::map<std::pair<int64_t, int>, int> lanes_used;
  int64_t lane_end[kMaxLanes];
  for (size_t g = 0; g < events.size();) {
    size_t e = g;
    int used = 0;
    for (; e < events.size() && events[e].pid == events[g].pid && events[e].stream == events[g].stream; ++e) {
      Event& ev = events[e];
      int lane = 0;
      while (lane < used && lane_end[lane] > ev.start_ns) ++lane;
      if (lane < used) {
        lane_end[lane] = ev.end_ns;  // the lane was free: its end <= this start <= this end
      } else if (used < kMaxLanes) {
        lane_end[used++] = ev.end_ns;
      } else {
        lane = kMaxLanes - 1;  // pathological overlap: share the last lane
        lane_end[lane] = std::max(lane_end[lane], ev.end_ns);
      }
      ev.lane = lane;
    }
    lanes_used[{events[g].pid, events[g].stream}] = used;
    g = e;
  }
  return lanes_used;
}

void put_int(std::string& buf, int64_t v) {
  char tmp[24];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf.append(tmp, r.ptr);
}

// Nanoseconds as microseconds with three decimals, exactly.
void put_us(std::string& buf, int64_t ns) {
  if (ns < 0) {
    buf += '-';
    ns = -ns;
  }
  put_int(buf, ns / 1000);
  const auto frac = static_cast<int>(ns % 1000);
  buf += '.';
  buf += static_cast<char>('0' + frac / 100);
  buf += static_cast<char>('0' + frac / 10 % 10);
  buf += static_cast<char>('0' + frac % 10);
}

// A comma before every array entry but the first keeps the JSON valid whatever is written.
void begin_entry(std::string& buf, bool& first) {
  if (!first) buf += ",\n";
  first = false;
}

void put_metadata(std::string& buf, bool& first, const char* what, int64_t pid, int64_t tid, const std::string& key,
                  const std::string& value_json) {
  begin_entry(buf, first);
  buf += "{\"name\":\"";
  buf += what;
  buf += "\",\"ph\":\"M\",\"pid\":";
  put_int(buf, pid);
  if (tid >= 0) {
    buf += ",\"tid\":";
    put_int(buf, tid);
  }
  buf += ",\"args\":{\"" + key + "\":" + value_json + "}}";
}

// A JSON string literal of text that needs no escaping (our own labels). Plain appends: GCC 12
// warns falsely (-Wrestrict) on `"\"" + s + "\""`.
std::string json_string(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

std::string thread_label(int stream, int lane) {
  std::string s = kTimelineStreams[stream];
  if (lane > 0) s += " (overlap " + std::to_string(lane) + ")";
  return s;
}

}  // namespace

size_t write_timeline_json(const TimelineInput& in, std::ostream& out) {
  if (!in.trace || !in.meta) throw std::invalid_argument("write_timeline_json: trace and meta are required");
  const TraceTable& t = *in.trace;
  const TimeSource times(in);
  const std::map<int64_t, StepWindow> windows = step_windows(in, times);
  const int64_t ideal_pid_base = in.meta->world_size;

  std::vector<Event> events;
  std::map<int32_t, std::pair<int32_t, int32_t>> ranks;  // rank -> (dp_rank, stage)
  for (size_t i = 0; i < t.size(); ++i) {
    const auto w = windows.find(t.step[i]);
    if (w == windows.end()) continue;
    ranks.try_emplace(t.rank[i], t.dp_rank[i], t.stage[i]);
    for (int copy = 0; copy < 2; ++copy) {
      if (!times.present(copy, i)) continue;
      const auto start_ns = std::llround((times.start(copy, i) + w->second.shift) * 1e9);
      const auto end_ns = std::llround((times.end(copy, i) + w->second.shift) * 1e9);
      events.push_back({i, copy == 0 ? int64_t{t.rank[i]} : ideal_pid_base + t.rank[i], timeline_stream(t.optype[i]), 0,
                        start_ns, std::max(end_ns, start_ns)});
    }
  }
  const auto lanes_used = assign_lanes(events);

  std::string buf;
  buf.reserve(1 << 20);
  buf += "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (const auto& [rank, place] : ranks) {
    for (int copy = 0; copy < (times.with_ideal() ? 2 : 1); ++copy) {
      const int64_t pid = copy == 0 ? rank : ideal_pid_base + rank;
      const std::string name = copy == 0 ? "rank " + std::to_string(rank) + " (dp " + std::to_string(place.first) +
                                               ", stage " + std::to_string(place.second) + ")"
                                         : "rank " + std::to_string(rank) + " (ideal)";
      put_metadata(buf, first, "process_name", pid, -1, "name", json_string(name));
      put_metadata(buf, first, "process_sort_index", pid, -1, "sort_index", std::to_string(2 * int64_t{rank} + copy));
      for (int stream = 0; stream < kNumTimelineStreams; ++stream) {
        const auto used = lanes_used.find({pid, stream});
        const int lanes = used == lanes_used.end() ? 1 : used->second;
        for (int lane = 0; lane < lanes; ++lane) {
          const int tid = stream + kNumTimelineStreams * lane;
          put_metadata(buf, first, "thread_name", pid, tid, "name", json_string(thread_label(stream, lane)));
          put_metadata(buf, first, "thread_sort_index", pid, tid, "sort_index", std::to_string(stream * kMaxLanes + lane));
        }
      }
    }
  }

  for (const Event& ev : events) {
    const size_t i = ev.row;
    begin_entry(buf, first);
    buf += "{\"name\":\"";
    buf += op_type_name(t.optype[i]);
    buf += "\",\"cat\":\"";
    buf += kTimelineStreams[ev.stream];
    buf += "\",\"ph\":\"X\",\"pid\":";
    put_int(buf, ev.pid);
    buf += ",\"tid\":";
    put_int(buf, ev.stream + kNumTimelineStreams * ev.lane);
    buf += ",\"ts\":";
    put_us(buf, ev.start_ns);
    buf += ",\"dur\":";
    put_us(buf, ev.end_ns - ev.start_ns);
    buf += ",\"args\":{\"step\":";
    put_int(buf, t.step[i]);
    buf += ",\"seq\":";
    put_int(buf, t.seq_id[i]);
    if (t.mb_id[i] >= 0) {
      buf += ",\"mb\":";
      put_int(buf, t.mb_id[i]);
    }
    if (t.mc[i] >= 0) {
      buf += ",\"mc\":";
      put_int(buf, t.mc[i]);
    }
    buf += "}}";
    if (buf.size() > (1 << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  buf += "\n]}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  return events.size();
}

}  // namespace sp::whatif
