// Chrome trace writer. Events are formatted by hand (fixed names, numbers via to_chars):
// SE's 2 x 107k events go out in well under a second, where a DOM-building JSON library would
// hold the whole document in memory first.
#include "straggler_probe/whatif/report_timeline.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

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

struct StepWindow {
  double begin = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  double shift = 0;  // added to every time of the step
};

// Microseconds with nanosecond resolution.
void put_us(std::string& buf, double seconds) {
  char tmp[48];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, seconds * 1e6, std::chars_format::fixed, 3);
  buf.append(tmp, r.ptr);
}

void put_int(std::string& buf, int64_t v) {
  char tmp[24];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf.append(tmp, r.ptr);
}

// Separates array entries: a comma before every entry but the first keeps the JSON valid
// whatever subset of events ends up written.
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

}  // namespace

size_t write_timeline_json(const TimelineInput& in, std::ostream& out) {
  if (!in.trace || !in.meta) throw std::invalid_argument("write_timeline_json: trace and meta are required");
  const TraceTable& t = *in.trace;
  const bool with_ideal = !in.ideal_start.empty();
  if (with_ideal && (in.ideal_start.size() != t.size() || in.ideal_end.size() != t.size())) {
    throw std::invalid_argument("write_timeline_json: ideal times must have one entry per trace row");
  }
  const bool given_real = !in.real_start.empty();
  if (given_real && (in.real_start.size() != t.size() || in.real_end.size() != t.size())) {
    throw std::invalid_argument("write_timeline_json: real times must have one entry per trace row");
  }
  auto real_start = [&](size_t i) { return given_real ? in.real_start[i] : t.start_ts[i]; };
  auto real_end = [&](size_t i) { return given_real ? in.real_end[i] : t.start_ts[i] + t.duration[i]; };
  auto has_ideal = [&](size_t i) { return with_ideal && !std::isnan(in.ideal_start[i]) && !std::isnan(in.ideal_end[i]); };

  // Step windows over both timelines; std::map keeps them in step order for the layout.
  std::map<int64_t, StepWindow> windows;
  for (const int64_t s : in.steps) windows[s];
  const bool all_steps = in.steps.empty();
  std::map<int32_t, std::pair<int32_t, int32_t>> ranks;  // rank -> (dp_rank, stage)
  for (size_t i = 0; i < t.size(); ++i) {
    auto it = all_steps ? windows.try_emplace(t.step[i]).first : windows.find(t.step[i]);
    if (it == windows.end()) continue;
    StepWindow& w = it->second;
    w.begin = std::min(w.begin, real_start(i));
    w.end = std::max(w.end, real_end(i));
    if (has_ideal(i)) {
      w.begin = std::min(w.begin, in.ideal_start[i]);
      w.end = std::max(w.end, in.ideal_end[i]);
    }
    ranks.try_emplace(t.rank[i], t.dp_rank[i], t.stage[i]);
  }
  double cursor = 0;
  for (auto& [step, w] : windows) {
    if (w.begin > w.end) continue;  // a requested step with no rows
    w.shift = cursor - w.begin;
    cursor += (w.end - w.begin) * 1.1;
  }

  const int64_t ideal_pid_base = in.meta->world_size;
  std::string buf;
  buf.reserve(1 << 20);
  buf += "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (const auto& [rank, place] : ranks) {
    for (int copy = 0; copy < (with_ideal ? 2 : 1); ++copy) {
      const int64_t pid = copy == 0 ? rank : ideal_pid_base + rank;
      const std::string name = copy == 0 ? "rank " + std::to_string(rank) + " (dp " + std::to_string(place.first) +
                                               ", stage " + std::to_string(place.second) + ")"
                                         : "rank " + std::to_string(rank) + " (ideal)";
      put_metadata(buf, first, "process_name", pid, -1, "name", "\"" + name + "\"");
      put_metadata(buf, first, "process_sort_index", pid, -1, "sort_index", std::to_string(2 * int64_t{rank} + copy));
      for (int tid = 0; tid < kNumTimelineStreams; ++tid) {
        put_metadata(buf, first, "thread_name", pid, tid, "name", std::string("\"") + kTimelineStreams[tid] + "\"");
        put_metadata(buf, first, "thread_sort_index", pid, tid, "sort_index", std::to_string(tid));
      }
    }
  }

  size_t events = 0;
  for (int copy = 0; copy < (with_ideal ? 2 : 1); ++copy) {
    for (size_t i = 0; i < t.size(); ++i) {
      const auto w = windows.find(t.step[i]);
      if (w == windows.end()) continue;
      if (copy == 1 && !has_ideal(i)) continue;
      const double start = copy == 0 ? real_start(i) : in.ideal_start[i];
      const double dur = copy == 0 ? real_end(i) - real_start(i) : in.ideal_end[i] - in.ideal_start[i];
      const int stream = timeline_stream(t.optype[i]);
      begin_entry(buf, first);
      buf += "{\"name\":\"";
      buf += op_type_name(t.optype[i]);
      buf += "\",\"cat\":\"";
      buf += kTimelineStreams[stream];
      buf += "\",\"ph\":\"X\",\"pid\":";
      put_int(buf, copy == 0 ? int64_t{t.rank[i]} : ideal_pid_base + t.rank[i]);
      buf += ",\"tid\":";
      put_int(buf, stream);
      buf += ",\"ts\":";
      put_us(buf, start + w->second.shift);
      buf += ",\"dur\":";
      put_us(buf, std::max(dur, 0.0));
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
      ++events;
      if (buf.size() > (1 << 20)) {
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        buf.clear();
      }
    }
  }
  buf += "\n]}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  return events;
}

}  // namespace sp::whatif
