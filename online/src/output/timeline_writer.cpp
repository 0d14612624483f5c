#include "timeline_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

namespace sp::online {
namespace {

// Microseconds to a nanosecond, as the trace format's ts / dur want them.
void append_us(std::string* out, double us) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), std::isfinite(us) ? us : 0.0, std::chars_format::fixed, 3);
  out->append(buf, r.ptr);
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

class EventList {
 public:
  explicit EventList(std::string* out) : out_(out) {}
  std::string& next() {
    if (!first_) *out_ += ',';
    first_ = false;
    return *out_;
  }

 private:
  std::string* out_;
  bool first_ = true;
};

void metadata(EventList& events, int pid, const char* what, const std::string& args) {
  std::string& o = events.next();
  o += R"({"ph":"M","name":")";
  o += what;
  o += R"(","pid":)";
  append_int(&o, pid);
  o += args;
  o += '}';
}

void rank_metadata(EventList& events, const TimelineStep& s, int world, const TimelineRanks& drawn) {
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<size_t>(r);
    if (!drawn.drawn[i] || i >= s.rank_dp.size() || i >= s.rank_stage.size()) continue;
    const std::string where = " (dp " + std::to_string(s.rank_dp[i]) + ", stage " + std::to_string(s.rank_stage[i]) + ")";
    for (int ideal = 0; ideal < 2; ++ideal) {
      const int pid = ideal ? world + r : r;
      metadata(events, pid, "process_name",
               R"(,"args":{"name":"rank )" + std::to_string(r) + (ideal ? " ideal" : " real") + where + "\"}");
      metadata(events, pid, "process_sort_index", R"(,"args":{"sort_index":)" + std::to_string(2 * r + ideal) + "}");
      metadata(events, pid, "thread_name", R"(,"tid":0,"args":{"name":"compute"})");
      metadata(events, pid, "thread_name", R"(,"tid":1,"args":{"name":"communication"})");
    }
  }
}

// What was left out, where the viewer shows it (a global instant event at the start: a marker
// across every lane) and in otherData; null when every rank is drawn.
nlohmann::ordered_json left_out_note(EventList& events, const TimelineRanks& drawn, const TimelineRankLimit& limit) {
  if (drawn.left_out() <= 0) return nullptr;
  const std::string within = limit.max_ranks > 0 ? "timeline_ranks=" + std::to_string(limit.max_ranks)
                                                 : "the " + std::to_string(limit.byte_budget >> 20) + " MiB budget";
  const std::string n = std::to_string(drawn.world);
  const std::string all = "STRAGGLER_PROBE_TIMELINE_RANKS=" + n + " (init(timeline_ranks=" + n +
                          "), analyze-dir --timeline-ranks " + n + ") draws every rank";
  const std::string text = std::to_string(drawn.left_out()) + " of " + std::to_string(drawn.world) +
                           " ranks left out to stay within " + within +
                           "; drawn: rank 0, the named ranks, each stage's slowest, then the slowest "
                           "(and every fourth the fastest) by S_w; " + all;
  std::string& o = events.next();
  o += R"({"ph":"i","s":"g","pid":0,"tid":0,"ts":0,"name":)";
  o += nlohmann::json("timeline: " + text).dump();
  o += '}';
  return {{"ranks", drawn.world}, {"ranks_drawn", drawn.shown}, {"ranks_left_out", drawn.left_out()},
          {"note", text}};
}

}  // namespace

std::string timeline_json_text(const std::deque<TimelineStep>& steps, const nlohmann::ordered_json& run,
                               const TimelineRankLimit& limit) {
  int world = 0;
  size_t ops = 0;
  for (const TimelineStep& s : steps) {
    world = std::max(world, static_cast<int>(s.rank_dp.size()));
    ops += s.ops.size();
  }
  const TimelineRanks drawn = choose_timeline_ranks(steps, world, limit);
  const double drawn_share = world > 0 ? static_cast<double>(drawn.shown) / world : 1.0;
  std::string out;
  out.reserve(static_cast<size_t>(drawn_share * static_cast<double>(160 * (2 * ops + 8 * static_cast<size_t>(world)))) + 1024);
  out += R"({"traceEvents":[)";
  EventList events(&out);
  const nlohmann::ordered_json note = left_out_note(events, drawn, limit);
  if (!steps.empty()) rank_metadata(events, steps.back(), world, drawn);
  std::map<std::string, std::string> names;  // op type -> its JSON string, escaped once
  // Steps end to end; a step's real and ideal copies share one offset so they line up.
  double offset_us = 0;
  std::vector<const std::string*> step_names;  // this step's: by type index
  const std::string no_name = nlohmann::json("").dump();
  for (const TimelineStep& s : steps) {
    double span = 0;
    step_names.clear();
    for (const std::string& type : s.type_names) {
      auto [name, fresh] = names.try_emplace(type);
      if (fresh) name->second = nlohmann::json(type).dump();
      step_names.push_back(&name->second);
    }
    for (const TimelineOp& op : s.ops) {
      span = std::max({span, op.real_end, op.ideal_end});
      if (op.rank < 0 || op.rank >= world || !drawn.drawn[static_cast<size_t>(op.rank)]) continue;
      const std::string& name = op.type >= 0 && static_cast<size_t>(op.type) < step_names.size()
                                    ? *step_names[static_cast<size_t>(op.type)]
                                    : no_name;
      for (int ideal = 0; ideal < 2; ++ideal) {
        const double b = ideal ? op.ideal_start : op.real_start;
        const double e = ideal ? op.ideal_end : op.real_end;
        std::string& o = events.next();
        o += R"({"ph":"X","name":)";
        o += name;
        o += R"(,"pid":)";
        append_int(&o, ideal ? world + op.rank : op.rank);
        o += op.comm ? R"(,"tid":1,"ts":)" : R"(,"tid":0,"ts":)";
        append_us(&o, offset_us + b * 1e6);
        o += R"(,"dur":)";
        append_us(&o, std::max(0.0, e - b) * 1e6);
        o += R"(,"args":{"step":)";
        append_int(&o, s.step);
        o += "}}";
      }
    }
    offset_us += span * 1.1e6;
  }
  // otherData: the trace format's free-form metadata (viewers show it, none needs it).
  out += R"(],"displayTimeUnit":"ms","otherData":{"straggler_probe_run":)";
  out += run.dump();
  if (!note.is_null()) {
    out += R"(,"straggler_probe_timeline":)";
    out += note.dump();
  }
  out += "}}\n";
  return out;
}

}  // namespace sp::online
