#include "tables.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace sp::bench::detection {
namespace {

const std::vector<std::string> kCauses = {"none", "worker", "stage-imbalance", "seq-imbalance",
                                          "gc", "comm", "cpu-delay"};

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

std::string three(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

std::string pct(const Ratio& r) {
  const auto v = r.value();
  if (!v) return "-";
  std::ostringstream o;
  o << percent(*v) << " (" << r.hit << '/' << r.of << ')';
  return o.str();
}

std::string pct(const Mean& m) {
  const auto v = m.value();
  return v ? percent(*v) : "-";
}

std::string num(const Mean& m) {
  const auto v = m.value();
  return v ? three(*v) : "-";
}

std::string alarms(const CellScore& c) {
  if (!c.alarms_reported) return "n/a";
  if (c.steps_to_alarm.empty()) return "-";
  std::ostringstream o;
  for (size_t i = 0; i < c.steps_to_alarm.size(); ++i) {
    if (i) o << ", ";
    if (c.steps_to_alarm[i]) o << *c.steps_to_alarm[i];
    else o << "never";
  }
  return o.str();
}

std::string false_alarm_rate(const CellScore& c) {
  if (!c.alarms_reported) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f",
                c.info.steps > 0 ? 1000.0 * static_cast<double>(c.false_alarms) / c.info.steps : 0.0);
  return buf;
}

}  // namespace

std::string score_table(const std::vector<CellScore>& cells) {
  std::ostringstream o;
  o << "| cell | ranks | steps | fault / clean / marginal | cause P | cause R | target P | target R | "
       "false flags | false alarms /1k | steps to alarm | S / measured | S err | S/S0 err | S clean |\n"
       "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const CellScore& c : cells) {
    o << "| " << c.info.name << " | " << c.info.ranks << " | " << c.info.steps << " | " << c.fault_steps << " / "
      << c.clean_steps << " / " << c.marginal << " | " << pct(c.cause_precision) << " | " << pct(c.cause_recall)
      << " | " << pct(c.target_precision) << " | " << pct(c.target_recall) << " | " << pct(c.false_flags) << " | "
      << false_alarm_rate(c) << " | " << alarms(c) << " | " << num(c.S_fault) << " / " << num(c.measured) << " | "
      << pct(c.S_error) << " | " << pct(c.S_twin_error) << " | " << num(c.S_clean) << " |\n";
  }
  return o.str();
}

std::string confusion_table(const std::vector<CellScore>& cells) {
  std::map<std::pair<std::string, std::string>, int64_t> total;
  std::vector<std::string> names = kCauses;
  for (const CellScore& c : cells) {
    for (const auto& [key, n] : c.confusion) {
      total[key] += n;
      for (const std::string& k : {key.first, key.second}) {
        if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
      }
    }
  }
  std::ostringstream o;
  o << "| true \\ named |";
  for (const std::string& n : names) o << ' ' << n << " |";
  o << " recall |\n| --- |";
  for (size_t i = 0; i <= names.size(); ++i) o << " ---: |";
  o << '\n';
  for (const std::string& t : names) {
    int64_t row = 0;
    for (const std::string& n : names) row += total[{t, n}];
    if (row == 0) continue;
    o << "| " << t << " |";
    for (const std::string& n : names) o << ' ' << total[{t, n}] << " |";
    o << ' ' << percent(static_cast<double>(total[{t, t}]) / static_cast<double>(row)) << " |\n";
  }
  return o.str();
}

std::string table_legend() {
  return "Steps before the warm-up are not scored. fault / clean / marginal: scored steps with a fault that "
         "counts (removing it makes the step >= 1% faster), without any fault, and with a fault too small to "
         "measure (left out of every column). cause P: of the steps naming a cause other than none, the share "
         "naming a true one; cause R: of the fault steps, the share naming a true cause; target P / R: the same "
         "for the named rank or stage (`worst`), where the truth can name one; false flags: of the clean steps, "
         "the share naming a straggler; false alarms /1k and steps to alarm (per fault: its first true alarm's "
         "step - onset + 1): from report.json's `alarms`, n/a when the analyzer writes none; S / measured: mean S "
         "and mean measured slowdown of the fault steps; S err: mean |S - measured| / measured; S/S0 err: the same "
         "for S divided by the clean twin's S of that step (the jitter's share taken out); S clean: mean S of the "
         "clean steps.\n";
}

}  // namespace sp::bench::detection
