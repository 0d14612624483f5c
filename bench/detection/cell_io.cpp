#include "cell_io.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sp::bench::detection {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

json culprit_json(const Culprit& c) { return {{"cause", c.cause}, {"targets", c.targets}}; }

Culprit culprit_from(const json& j) {
  Culprit c;
  c.cause = j.at("cause").get<std::string>();
  c.targets = j.at("targets").get<std::vector<std::string>>();
  return c;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) fail(path, "cannot write");
}

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open");
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    fail(path, std::string("not valid JSON: ") + e.what());
  }
}

// Calls `each` with every non-empty line of a JSONL file, parsed; errors name the line.
template <class F>
void for_each_line(const std::string& path, F each) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open");
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      each(json::parse(line));
    } catch (const json::exception& e) {
      fail(path + ":" + std::to_string(n), e.what());
    }
  }
}

}  // namespace

void write_cell(const std::string& dir, const CellInfo& c, const std::vector<TruthStep>& truth) {
  fs::create_directories(dir);
  json faults = json::array();
  for (const CellFault& f : c.faults) {
    json j = culprit_json(f.culprit);
    j["onset"] = f.onset;
    j["every"] = f.every;
    faults.push_back(j);
  }
  const json info = {{"name", c.name},       {"shape", c.shape},       {"scenario", c.scenario},
                     {"source", c.source},   {"ranks", c.ranks},       {"jitter", c.jitter},
                     {"seed", c.seed},       {"steps", c.steps},       {"warmup", c.warmup},
                     {"faults", faults},     {"verdicts", c.verdicts}, {"report", c.report},
                     {"twin", c.twin}};
  write_text(dir + "/cell.json", info.dump(1) + "\n");
  std::string lines;
  for (const TruthStep& t : truth) {
    json active = json::array();
    for (const Culprit& a : t.active) active.push_back(culprit_json(a));
    lines += json{{"step", t.step}, {"active", active}, {"marginal", t.marginal},
                  {"measured_slowdown", t.measured_slowdown}}.dump() + "\n";
  }
  write_text(dir + "/truth.jsonl", lines);
}

CellInfo read_cell_info(const std::string& dir) {
  const std::string path = dir + "/cell.json";
  const json j = read_json(path);
  try {
    CellInfo c;
    c.name = j.at("name").get<std::string>();
    c.shape = j.at("shape").get<std::string>();
    c.scenario = j.at("scenario").get<std::string>();
    c.source = j.value("source", "synthetic");
    c.ranks = j.at("ranks").get<int>();
    c.jitter = j.value("jitter", 0.0);
    c.seed = j.value("seed", uint64_t{0});
    c.steps = j.at("steps").get<int>();
    c.warmup = j.at("warmup").get<int>();
    for (const json& f : j.at("faults")) {
      c.faults.push_back({culprit_from(f), f.at("onset").get<int64_t>(), f.value("every", 1)});
    }
    c.verdicts = j.value("verdicts", c.verdicts);
    c.report = j.value("report", c.report);
    c.twin = j.value("twin", "");
    return c;
  } catch (const json::exception& e) {
    fail(path, e.what());
  }
}

std::vector<TruthStep> read_truth(const std::string& dir) {
  std::vector<TruthStep> out;
  for_each_line(dir + "/truth.jsonl", [&](const json& j) {
    TruthStep t;
    t.step = j.at("step").get<int64_t>();
    for (const json& a : j.at("active")) t.active.push_back(culprit_from(a));
    t.marginal = j.value("marginal", false);
    t.measured_slowdown = j.at("measured_slowdown").get<double>();
    out.push_back(std::move(t));
  });
  return out;
}

std::vector<VerdictStep> read_verdicts(const std::string& path) {
  std::vector<VerdictStep> out;
  for_each_line(path, [&](const json& j) {
    // A step record: "event" missing or "step". Other events (alarms) are skipped, and so are
    // records without an event that are not about a step (the rank table the analyzer writes
    // once: {"rank_table": [...]}); a record that says it is a step must have one.
    if (j.contains("event") && j.at("event") != "step") return;
    if (!j.contains("event") && !j.contains("step")) return;
    VerdictStep v;
    v.step = j.at("step").get<int64_t>();
    v.analyzed = j.at("analyzed").get<bool>();
    if (v.analyzed) {
      v.cause = j.at("cause").get<std::string>();
      v.worst = j.at("worst").get<std::string>();
      v.S = j.at("S").is_null() ? 0.0 : j.at("S").get<double>();
    }
    out.push_back(std::move(v));
  });
  return out;
}

void read_alarms(const std::string& path, CellOutputs* out) {
  out->alarms_reported = false;
  out->alarms.clear();
  if (!fs::exists(path)) return;
  const json j = read_json(path);
  if (!j.contains("alarms")) return;
  try {
    for (const json& a : j.at("alarms")) {
      Alarm al;
      al.target = a.at("target").get<std::string>();
      al.cause = a.at("cause").get<std::string>();
      al.raised_step = a.at("raised_step").get<int64_t>();
      if (a.contains("cleared_step") && !a.at("cleared_step").is_null()) {
        al.cleared_step = a.at("cleared_step").get<int64_t>();
      }
      out->alarms.push_back(std::move(al));
    }
  } catch (const json::exception& e) {
    fail(path, std::string("\"alarms\": ") + e.what());
  }
  out->alarms_reported = true;
}

CellOutputs read_outputs(const std::string& dir, const CellInfo& info) {
  CellOutputs out;
  out.verdicts = read_verdicts(dir + "/" + info.verdicts);
  read_alarms(dir + "/" + info.report, &out);
  return out;
}

}  // namespace sp::bench::detection
