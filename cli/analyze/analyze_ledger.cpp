#include "analyze_ledger.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "straggler_probe/whatif/number_text.h"

namespace sp::cli {
namespace {

using json = nlohmann::ordered_json;
using whatif::fixed;

double finite_or_zero(double x) { return std::isfinite(x) ? x : 0.0; }

// GPU-seconds a what-if gives back over the run: (mean no-delay step - mean step with the cells
// fixed) x steps x GPUs, >= 0.
double given_back(const whatif::SlowdownExplanation& e, size_t steps, int gpus) {
  return std::max(0.0, finite_or_zero(e.tori - e.trem)) * static_cast<double>(steps) * gpus;
}

std::string percent(double part, double whole) { return fixed(whole > 0 ? 100.0 * part / whole : 0.0, 1) + "%"; }

// A what-if's GPU-seconds as a share of the run, or "all of it" when it covers the whole loss.
std::string given_back_text(double s, double lost, double time) { return s >= lost ? "all of it" : percent(s, time); }

}  // namespace

json offline_ledger_json(const whatif::AnalysisResult& r, const whatif::SlowdownExplanation& ms,
                         const std::optional<whatif::SlowdownExplanation>& mw) {
  const int gpus = std::max(1, r.job_meta.world_size);
  std::map<int64_t, double> ideal;
  for (const whatif::StepValue& s : r.step_t_noblk) ideal[s.step] = s.value;
  double time = 0, lost = 0;
  size_t steps = 0;
  for (const whatif::StepValue& s : r.step_t_base) {
    const auto it = ideal.find(s.step);
    if (it == ideal.end()) continue;
    ++steps;
    time += finite_or_zero(s.value) * gpus;
    lost += std::max(0.0, finite_or_zero(s.value - it->second)) * gpus;
  }
  json j;
  j["analyzed_steps"] = steps;
  j["gpus"] = gpus;
  j["gpu_seconds"] = time;
  j["lost_gpu_seconds"] = lost;
  j["lost_share"] = time > 0 ? lost / time : 0.0;
  j["by_cause"] = {{"unattributed", lost}};
  j["by_host"] = json::object();  // a trace names no hosts
  json by_stage = json::object(), top = json::array(), what_if = json::object();
  double fixable = 0;
  if (r.pp_size > 1) {
    const double s = given_back(ms, steps, gpus);
    by_stage[std::to_string(r.pp_size - 1)] = std::min(s, lost);  // M_S can exceed 1 (a heavier stage)
    what_if["fix_last_stage"] = {{"stage", r.pp_size - 1}, {"gpu_seconds", s}, {"share", time > 0 ? s / time : 0.0}};
    fixable = std::max(fixable, std::min(s, lost));
  }
  if (mw) {
    const double s = given_back(*mw, steps, gpus);
    what_if["fix_top_workers"] = {{"ranks", mw->fixed_ranks}, {"gpu_seconds", s}, {"share", time > 0 ? s / time : 0.0}};
    if (mw->fixed_ranks.size() == 1) {
      const double charged = std::min(s, lost);
      top.push_back({{"rank", mw->fixed_ranks[0]}, {"host", nullptr}, {"gpu", nullptr}, {"gpu_seconds", charged},
                     {"share", time > 0 ? charged / time : 0.0}});
    }
    fixable = std::max(fixable, std::min(s, lost));
  }
  j["by_stage"] = std::move(by_stage);
  j["top_ranks"] = std::move(top);
  j["fixable_gpu_seconds"] = fixable;
  j["what_if"] = std::move(what_if);
  j["note"] = "offline: no cause or culprit per step; what fixing the last stage or the top workers over the whole "
              "run gives back (the larger is fixable_gpu_seconds)";
  return j;
}

std::string offline_ledger_line(const json& lost) {
  const double time = lost.at("gpu_seconds").get<double>();
  const double gone = lost.at("lost_gpu_seconds").get<double>();
  std::string out = "lost " + percent(gone, time) + " of GPU time (" + fixed(gone / 3600.0, 2) + " of " +
                    fixed(time / 3600.0, 2) + " GPU-h, " + std::to_string(lost.at("analyzed_steps").get<size_t>()) +
                    " steps, " + std::to_string(lost.at("gpus").get<int>()) + " GPUs)";
  const json& w = lost.at("what_if");
  std::string parts;
  if (w.contains("fix_last_stage")) {
    parts += "fixing the last stage (" + std::to_string(w["fix_last_stage"]["stage"].get<int>()) + ") gives back " +
             given_back_text(w["fix_last_stage"]["gpu_seconds"].get<double>(), gone, time);
  }
  if (w.contains("fix_top_workers")) {
    std::string ranks;
    for (const auto& rank : w["fix_top_workers"]["ranks"]) ranks += (ranks.empty() ? "" : ", ") + rank.dump();
    parts += std::string(parts.empty() ? "fixing the top workers" : ", the top workers") + " (rank" +
             (w["fix_top_workers"]["ranks"].size() == 1 ? " " : "s ") + ranks + ") " +
             (parts.empty() ? "gives back " : "") +
             given_back_text(w["fix_top_workers"]["gpu_seconds"].get<double>(), gone, time);
  }
  return parts.empty() ? out : out + "; " + parts;
}

}  // namespace sp::cli
