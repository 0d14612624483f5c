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

void rank_metadata(EventList& events, const TimelineStep& s, int world) {
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<size_t>(r);
    const std::string where = " (dp " + std::to_string(s.rank_dp[i]) + ", stage " + std::to_string(s.rank_stage[i]) + ")";
    for (int ideal = 0; ideal < 2; ++ideal) {
      const int pid = ideal ? world + r : r;
      metadata(events, pid, "process_name",
               R"(,"args":{"name":"rank )" + std::to_string(r) + (ideal ? " ideal" : " real") + where + "\"}");
      metadata(events, pid, "process_sort_index", R"(,"args":{"sort_index":)" + std::to_string(2 * r + ideal) + "}");
      metadata(events, pid, "thread_name", R"(,"tid":0,"args":{"name":"host / compute"})");
      metadata(events, pid, "thread_name", R"(,"tid":1,"args":{"name":"communication"})");
    }
  }
}

}  // namespace

std::string timeline_json_text(const std::deque<TimelineStep>& steps, const nlohmann::ordered_json& run) {
  int world = 0;
  size_t ops = 0;
  for (const TimelineStep& s : steps) {
    world = std::max(world, static_cast<int>(s.rank_dp.size()));
    ops += s.ops.size();
  }
  std::string out;
  out.reserve(160 * (2 * ops + 8 * static_cast<size_t>(world)) + 256);
  out += R"({"traceEvents":[)";
  EventList events(&out);
  if (!steps.empty()) rank_metadata(events, steps.back(), world);
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
  out += "}}\n";
  return out;
}

}  // namespace sp::online
