// Scores one cell: the analyzer's verdicts and alarms against the cell's ground truth. Only
// what the analyzer wrote is read (cause, worst, S, alarms), never how it got there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cell_io.h"

namespace sp::bench::detection {

struct Ratio {
  int64_t hit = 0, of = 0;
  void add(bool h) { hit += h, ++of; }
  std::optional<double> value() const {
    return of ? std::optional<double>(static_cast<double>(hit) / static_cast<double>(of)) : std::nullopt;
  }
};

struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double x) { sum += x, ++n; }
  std::optional<double> value() const { return n ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt; }
};

struct CellScore {
  CellInfo info;
  // Steps from the warm-up on. A marginal step (a fault that does not measurably slow it) is
  // counted in `marginal` and nowhere else; a step without an analysed verdict names nobody.
  int64_t fault_steps = 0, clean_steps = 0, marginal = 0, unanalyzed = 0;
  Ratio cause_precision;   // of the steps naming a cause (not none): the cause is a true one
  Ratio cause_recall;      // of the fault steps: a true cause is named
  Ratio target_precision;  // of the steps naming a rank or stage whose truth can be told: right
  Ratio target_recall;     // of the fault steps with an identifiable culprit: it is named
  Ratio false_flags;       // of the clean steps: a straggler is named
  Mean S_error;            // fault steps: |S - m| / m, m the measured slowdown
  Mean S_twin_error;       // fault steps: |S / S0 - m| / m, S0 the clean twin's S of that step
  Mean S_fault, measured;  // fault steps: mean S, mean measured slowdown
  Mean S_clean;            // clean steps: mean S
  bool alarms_reported = false;
  int64_t false_alarms = 0;
  std::vector<std::optional<int64_t>> steps_to_alarm;  // per fault: first true alarm - onset + 1
  std::map<std::pair<std::string, std::string>, int64_t> confusion;  // (true, named) -> steps
};

CellScore score_cell(const CellInfo& info, const std::vector<TruthStep>& truth,
                     const CellOutputs& outputs, const std::vector<VerdictStep>* twin);

// An alarm is true for a fault when it names the fault's cause and one of its targets (any
// target when the fault has none) and was raised at or after the fault's onset.
bool alarm_matches(const Alarm& a, const CellFault& f);

}  // namespace sp::bench::detection
