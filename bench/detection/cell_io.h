// One benchmark cell on disk, the same for the synthetic matrix and the real gloo jobs:
//   cell.json     what ran (shape, scenario, seed, warm-up, the planted faults, where the
//                 analyzer's outputs are, the clean twin)
//   truth.jsonl   one line per step: the faults that count on it, marginal, measured slowdown
// and the analyzer's own outputs, read as a user would read them:
//   the verdict JSONL (straggler_probe_steps.jsonl): lines with "step", "analyzed", "cause",
//     "worst", "S" (lines with an "event" other than "step" are not verdicts and are skipped)
//   report.json: its "alarms" list, when the analyzer writes one (see README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sp::bench::detection {

struct Culprit {
  std::string cause;
  std::vector<std::string> targets;  // empty: any (not identifiable, or changing every step)
};

struct CellFault {
  Culprit culprit;
  int64_t onset = 0;
  int every = 1;
};

struct CellInfo {
  std::string name, shape, scenario, source = "synthetic";
  int ranks = 0;
  double jitter = 0;
  uint64_t seed = 0;
  int steps = 0;
  int warmup = 0;               // steps below this are not scored
  std::vector<CellFault> faults;
  std::string verdicts = "straggler_probe_steps.jsonl";  // relative to the cell's folder
  std::string report = "report/report.json";
  std::string twin;             // the clean twin's folder, relative to this one ("" none)
};

struct TruthStep {
  int64_t step = 0;
  std::vector<Culprit> active;  // largest effect first; empty: nothing counts
  bool marginal = false;
  double measured_slowdown = 1.0;
  std::string cause() const { return active.empty() ? "none" : active.front().cause; }
};

struct VerdictStep {
  int64_t step = 0;
  bool analyzed = false;
  std::string cause = "none";
  std::string worst;
  double S = 1.0;
};

struct Alarm {
  std::string target, cause;
  int64_t raised_step = 0;
  std::optional<int64_t> cleared_step;
};

struct CellOutputs {
  std::vector<VerdictStep> verdicts;
  bool alarms_reported = false;  // report.json has an "alarms" list
  std::vector<Alarm> alarms;
};

// Each throws std::runtime_error naming the file and what is wrong with it.
void write_cell(const std::string& dir, const CellInfo& info, const std::vector<TruthStep>& truth);
CellInfo read_cell_info(const std::string& dir);
std::vector<TruthStep> read_truth(const std::string& dir);
std::vector<VerdictStep> read_verdicts(const std::string& path);
// No report.json, or one without "alarms": alarms_reported stays false.
void read_alarms(const std::string& report_path, CellOutputs* out);
CellOutputs read_outputs(const std::string& dir, const CellInfo& info);

}  // namespace sp::bench::detection
