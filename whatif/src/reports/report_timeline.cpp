// Chrome trace writer. Events are formatted by hand into a fixed buffer flushed every 1 MiB
// (fixed names, integer nanoseconds): nothing but the layout is held in memory, and SE's
// 214k events are written in a few milliseconds (bench/README.md).
#include "straggler_probe/whatif/report_timeline.h"

#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "timeline_layout.h"

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

using detail::TimelineEvent;
using detail::TimelineLayout;

// Appends into a fixed buffer and hands it to the stream whenever less than one entry's worth
// of room is left. Every entry written between two room() calls must fit in kSlack.
class JsonOut {
 public:
  explicit JsonOut(std::ostream& out) : out_(out), buf_(new char[kSize + kSlack]), p_(buf_.get()) {}
  void room() {
    if (p_ - buf_.get() >= static_cast<std::ptrdiff_t>(kSize)) flush();
  }
  void flush() {
    out_.write(buf_.get(), p_ - buf_.get());
    p_ = buf_.get();
  }
  void text(std::string_view s) {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void integer(int64_t v) {
    // Most numbers written are ids and counts of one or two digits (pid, tid, step, seq, mb).
    if (static_cast<uint64_t>(v) < 10) {
      *p_++ = static_cast<char>('0' + v);
    } else if (static_cast<uint64_t>(v) < 100) {
      p_[0] = static_cast<char>('0' + v / 10);
      p_[1] = static_cast<char>('0' + v % 10);
      p_ += 2;
    } else {
      p_ = std::to_chars(p_, p_ + 24, v).ptr;
    }
  }
  // Nanoseconds as microseconds with three decimals, exactly.
  void micros(int64_t ns) {
    if (ns < 0) {
      *p_++ = '-';
      ns = -ns;
    }
    integer(ns / 1000);
    const auto frac = static_cast<int>(ns % 1000);
    p_[0] = '.';
    p_[1] = static_cast<char>('0' + frac / 100);
    p_[2] = static_cast<char>('0' + frac / 10 % 10);
    p_[3] = static_cast<char>('0' + frac % 10);
    p_ += 4;
  }
  // A comma before every array entry but the first keeps the JSON valid whatever is written.
  void begin_entry() {
    if (!first_) text(",\n");
    first_ = false;
  }

 private:
  static constexpr size_t kSize = 1 << 20;
  static constexpr size_t kSlack = 4096;  // an event is under 300 bytes; labels are short
  std::ostream& out_;
  std::unique_ptr<char[]> buf_;
  char* p_;
  bool first_ = true;
};

// A metadata entry whose value is a JSON string of our own labels (no escaping needed) or a number.
void put_metadata(JsonOut& j, std::string_view what, int64_t pid, int64_t tid, std::string_view key,
                  std::string_view label, int64_t number) {
  j.room();
  j.begin_entry();
  j.text("{\"name\":\"");
  j.text(what);
  j.text("\",\"ph\":\"M\",\"pid\":");
  j.integer(pid);
  if (tid >= 0) {
    j.text(",\"tid\":");
    j.integer(tid);
  }
  j.text(",\"args\":{\"");
  j.text(key);
  j.text("\":");
  if (label.empty()) {
    j.integer(number);
  } else {
    j.text("\"");
    j.text(label);
    j.text("\"");
  }
  j.text("}}");
}

std::string thread_label(int stream, int lane) {
  std::string s = kTimelineStreams[stream];
  if (lane > 0) s += " (overlap " + std::to_string(lane) + ")";
  return s;
}

void put_processes(JsonOut& j, const TimelineLayout& layout, int32_t world) {
  for (const auto& place : layout.ranks) {
    for (int copy = 0; copy < (layout.with_ideal ? 2 : 1); ++copy) {
      const int32_t pid = copy * world + place.rank;
      const std::string rank = "rank " + std::to_string(place.rank);
      const std::string name = copy == 0 ? rank + " (dp " + std::to_string(place.dp_rank) + ", stage " +
                                               std::to_string(place.stage) + ")"
                                         : rank + " (ideal)";
      put_metadata(j, "process_name", pid, -1, "name", name, 0);
      put_metadata(j, "process_sort_index", pid, -1, "sort_index", {}, 2 * int64_t{place.rank} + copy);
      for (int stream = 0; stream < kNumTimelineStreams; ++stream) {
        const int used = layout.lanes_used[static_cast<size_t>(pid) * kNumTimelineStreams + stream];
        for (int lane = 0; lane < (used == 0 ? 1 : used); ++lane) {
          const int tid = stream + kNumTimelineStreams * lane;
          put_metadata(j, "thread_name", pid, tid, "name", thread_label(stream, lane), 0);
          put_metadata(j, "thread_sort_index", pid, tid, "sort_index", {},
                       stream * detail::kMaxTimelineLanes + lane);
        }
      }
    }
  }
}

// `{"name":"<op type>","cat":"<stream>","ph":"X","pid":` for every op type.
std::array<std::string, kNumOpTypes> event_heads() {
  std::array<std::string, kNumOpTypes> heads;
  for (int i = 0; i < kNumOpTypes; ++i) {
    const auto t = static_cast<OpType>(i);
    heads[static_cast<size_t>(i)] = std::string("{\"name\":\"") + std::string(op_type_name(t)) + "\",\"cat\":\"" +
                                    kTimelineStreams[timeline_stream(t)] + "\",\"ph\":\"X\",\"pid\":";
  }
  return heads;
}

void put_event(JsonOut& j, const std::array<std::string, kNumOpTypes>& heads, const TraceTable& t,
               const TimelineEvent& ev) {
  const size_t i = ev.row;
  j.room();
  j.begin_entry();
  j.text(heads[static_cast<size_t>(t.optype[i])]);
  j.integer(ev.pid);
  j.text(",\"tid\":");
  j.integer(ev.stream + kNumTimelineStreams * ev.lane);
  j.text(",\"ts\":");
  j.micros(ev.start_ns);
  j.text(",\"dur\":");
  j.micros(ev.end_ns - ev.start_ns);
  j.text(",\"args\":{\"step\":");
  j.integer(t.step[i]);
  j.text(",\"seq\":");
  j.integer(t.seq_id[i]);
  if (t.mb_id[i] >= 0) {
    j.text(",\"mb\":");
    j.integer(t.mb_id[i]);
  }
  if (t.mc[i] >= 0) {
    j.text(",\"mc\":");
    j.integer(t.mc[i]);
  }
  j.text("}}");
}

}  // namespace

size_t write_timeline_json(const TimelineInput& in, std::ostream& out) {
  const TimelineLayout layout = detail::lay_out_timeline(in);
  JsonOut j(out);
  j.text("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  put_processes(j, layout, in.meta->world_size);
  const auto heads = event_heads();
  for (const TimelineEvent& ev : layout.events) put_event(j, heads, *in.trace, ev);
  j.text("\n]}\n");
  j.flush();
  return layout.events.size();
}

}  // namespace sp::whatif
