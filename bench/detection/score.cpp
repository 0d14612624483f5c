#include "score.h"

#include <algorithm>
#include <cmath>

namespace sp::bench::detection {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::map<int64_t, const VerdictStep*> by_step(const std::vector<VerdictStep>& v) {
  std::map<int64_t, const VerdictStep*> m;
  for (const VerdictStep& s : v) m[s.step] = &s;
  return m;
}

void score_fault_step(const TruthStep& t, const VerdictStep& v, const VerdictStep* twin, CellScore* c) {
  ++c->fault_steps;
  const bool named = v.cause != "none";
  bool cause_ok = false;
  std::vector<std::string> targets;
  for (const Culprit& a : t.active) {
    cause_ok = cause_ok || a.cause == v.cause;
    targets.insert(targets.end(), a.targets.begin(), a.targets.end());
  }
  c->cause_recall.add(cause_ok);
  if (named) c->cause_precision.add(cause_ok);
  if (!targets.empty()) {
    const bool target_ok = contains(targets, v.worst);
    c->target_recall.add(target_ok);
    if (!v.worst.empty()) c->target_precision.add(target_ok);
  }
  if (!v.analyzed) return;
  const double m = t.measured_slowdown;
  c->S_error.add(std::fabs(v.S - m) / m);
  c->S_fault.add(v.S);
  c->measured.add(m);
  if (twin && twin->analyzed && twin->S > 0) c->S_twin_error.add(std::fabs(v.S / twin->S - m) / m);
}

void score_alarms(const CellInfo& info, const CellOutputs& out, CellScore* c) {
  c->alarms_reported = out.alarms_reported;
  c->steps_to_alarm.assign(info.faults.size(), std::nullopt);
  if (!out.alarms_reported) return;
  for (const Alarm& a : out.alarms) {
    bool matched = false;
    for (size_t i = 0; i < info.faults.size(); ++i) {
      const CellFault& f = info.faults[i];
      if (!alarm_matches(a, f)) continue;
      matched = true;
      const int64_t steps = a.raised_step - f.onset + 1;
      auto& best = c->steps_to_alarm[i];
      if (!best || steps < *best) best = steps;
    }
    c->false_alarms += !matched;
  }
}

}  // namespace

bool alarm_matches(const Alarm& a, const CellFault& f) {
  return a.cause == f.culprit.cause && a.raised_step >= f.onset &&
         (f.culprit.targets.empty() || contains(f.culprit.targets, a.target));
}

CellScore score_cell(const CellInfo& info, const std::vector<TruthStep>& truth,
                     const CellOutputs& outputs, const std::vector<VerdictStep>* twin) {
  CellScore c;
  c.info = info;
  const auto verdicts = by_step(outputs.verdicts);
  const auto twins = twin ? by_step(*twin) : std::map<int64_t, const VerdictStep*>{};
  const VerdictStep nothing;  // a step without an analysed verdict names nobody
  for (const TruthStep& t : truth) {
    if (t.step < info.warmup) continue;
    const auto it = verdicts.find(t.step);
    const VerdictStep& v = it != verdicts.end() && it->second->analyzed ? *it->second : nothing;
    c.unanalyzed += !v.analyzed;
    if (t.marginal) {
      ++c.marginal;
      continue;
    }
    ++c.confusion[{t.cause(), v.cause}];
    if (!t.active.empty()) {
      const auto tw = twins.find(t.step);
      score_fault_step(t, v, tw != twins.end() ? tw->second : nullptr, &c);
      continue;
    }
    ++c.clean_steps;
    const bool named = v.cause != "none";
    c.false_flags.add(named);
    if (named) c.cause_precision.add(false);
    if (!v.worst.empty()) c.target_precision.add(false);
    if (v.analyzed) c.S_clean.add(v.S);
  }
  score_alarms(info, outputs, &c);
  return c;
}

}  // namespace sp::bench::detection
