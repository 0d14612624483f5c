#include "ledger.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using json = nlohmann::ordered_json;
using whatif::fixed;

double finite_or_zero(double x) { return std::isfinite(x) ? x : 0.0; }

json null_if_empty(const std::string& s) { return s.empty() ? json() : json(s); }
json null_if_negative(int i) { return i < 0 ? json() : json(i); }

// "node-17 gpu 3 (rank 5)", "stage 7", "rank 5": where a user acts.
std::string place_text(const Culprit& target, const std::string& host, int gpu) {
  const int rank = target.rank_index();
  const int stage = target.stage_index();
  if (stage >= 0) return "stage " + std::to_string(stage);
  if (rank < 0) return target.text();
  if (host.empty()) return "rank " + std::to_string(rank);
  std::string out = host;
  if (gpu >= 0) out += " gpu " + std::to_string(gpu);
  return out + " (rank " + std::to_string(rank) + ")";
}

bool hostname_chars(const std::string& s) {
  if (s.empty() || s.size() > 255) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
  });
}

std::string percent(double part, double whole) { return fixed(whole > 0 ? 100.0 * part / whole : 0.0, 1) + "%"; }

}  // namespace

double named_fix_gain_s(const SlowdownMetrics& m, const StepVerdict& v) {
  if (v.cause == Cause::kNone) return 0.0;
  const int rank = v.worst.rank_index();
  if (rank >= 0 && static_cast<size_t>(rank) < v.rank_dp.size()) {
    const auto dp = static_cast<size_t>(v.rank_dp[static_cast<size_t>(rank)]);
    return dp < m.dp_fix_gain.size() ? std::max(0.0, finite_or_zero(m.dp_fix_gain[dp] * m.T_ideal)) : 0.0;
  }
  const int stage = v.worst.stage_index();
  if (stage >= 0 && static_cast<size_t>(stage) < m.fix_stage_share.size()) {
    const double gap = std::max(0.0, m.T_real - m.T_ideal);
    return std::clamp(finite_or_zero(m.fix_stage_share[static_cast<size_t>(stage)] * gap), 0.0, gap);
  }
  return 0.0;
}

StepLoss step_loss(const StepVerdict& v) {
  StepLoss l;
  if (!v.analyzed) return l;
  l.gpus = static_cast<int>(std::max<size_t>(1, v.rank_dp.size()));
  l.gpu_s = std::max(0.0, finite_or_zero(v.time_s - v.ideal_s)) * l.gpus;
  l.cause = std::string(cause_name(v.cause));
  if (v.cause == Cause::kNone || v.worst.empty()) return l;
  l.target = v.worst;
  l.rank = v.worst.rank_index();
  if (l.rank >= 0 && static_cast<size_t>(l.rank) < v.rank_stage.size()) {
    l.host = v.worst_host;
    l.gpu = v.worst_device;
    l.stage = v.rank_stage[static_cast<size_t>(l.rank)];
  } else {
    l.rank = -1;
    l.stage = v.worst.stage_index();
  }
  l.fix_gain_gpu_s = std::min(l.gpu_s, std::max(0.0, finite_or_zero(v.fix_gain_s)) * l.gpus);
  return l;
}

json step_loss_json(const StepLoss& l) {
  return {{"gpu_s", l.gpu_s},
          {"gpus", l.gpus},
          {"cause", l.cause},
          {"target", null_if_empty(l.target.text())},
          {"host", null_if_empty(l.host)},
          {"gpu", null_if_negative(l.gpu)},
          {"stage", null_if_negative(l.stage)},
          {"fix_gain_gpu_s", l.fix_gain_gpu_s}};
}

void Ledger::add(const StepVerdict& v) {
  if (!v.analyzed) return;
  const StepLoss l = step_loss(v);
  ++steps_;
  gpus_ = l.gpus;
  gpu_seconds_ += std::max(0.0, finite_or_zero(v.time_s)) * l.gpus;
  lost_ += l.gpu_s;
  by_cause_[l.cause == "none" ? "unattributed" : l.cause] += l.gpu_s;
  if (l.target.empty()) return;
  const double gain = l.fix_gain_gpu_s;
  fixable_ += gain;
  if (!l.host.empty()) by_host_[l.host] += gain;
  if (l.stage >= 0) by_stage_[std::to_string(l.stage)] += gain;
  if (l.rank >= 0) {
    RankLoss& r = by_rank_[l.rank];
    r.host = l.host;
    r.gpu = l.gpu;
    r.gpu_s += gain;
  }
  CulpritLoss& c = culprits_[l.cause + " " + l.target.text()];
  c.cause = l.cause;
  c.target = l.target;
  c.host = l.host;
  c.gpu = l.gpu;
  c.gpu_s += gain;
}

json Ledger::to_json() const {
  json j;
  j["analyzed_steps"] = steps_;
  j["gpus"] = gpus_;
  j["gpu_seconds"] = gpu_seconds_;
  j["lost_gpu_seconds"] = lost_;
  j["lost_share"] = gpu_seconds_ > 0 ? lost_ / gpu_seconds_ : 0.0;
  std::map<std::string, double> causes = by_cause_;
  causes.try_emplace("unattributed", 0.0);  // a stable key for readers
  j["by_cause"] = json(causes);
  j["by_host"] = json(by_host_);
  j["by_stage"] = json(by_stage_);
  std::vector<std::pair<int, const RankLoss*>> ranks;
  for (const auto& [rank, r] : by_rank_) ranks.emplace_back(rank, &r);
  std::stable_sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.second->gpu_s > b.second->gpu_s; });
  json top = json::array();
  for (size_t i = 0; i < ranks.size() && i < kTopRanks; ++i) {
    const RankLoss& r = *ranks[i].second;
    top.push_back({{"rank", ranks[i].first},
                   {"host", null_if_empty(r.host)},
                   {"gpu", null_if_negative(r.gpu)},
                   {"gpu_seconds", r.gpu_s},
                   {"share", gpu_seconds_ > 0 ? r.gpu_s / gpu_seconds_ : 0.0}});
  }
  j["top_ranks"] = std::move(top);
  j["fixable_gpu_seconds"] = fixable_;
  return j;
}

std::string Ledger::text() const {
  if (steps_ == 0) return {};
  std::string out = "lost " + percent(lost_, gpu_seconds_) + " of GPU time (" + fixed(lost_ / 3600.0, 2) + " of " +
                    fixed(gpu_seconds_ / 3600.0, 2) + " GPU-h, " + std::to_string(steps_) + " steps, " +
                    std::to_string(gpus_) + " GPUs)";
  std::vector<const CulpritLoss*> order;
  for (const auto& [key, c] : culprits_) {
    if (c.gpu_s > 0) order.push_back(&c);
  }
  std::stable_sort(order.begin(), order.end(), [](const CulpritLoss* a, const CulpritLoss* b) { return a->gpu_s > b->gpu_s; });
  if (order.empty()) return out + ": no culprit named";
  out += ":";
  for (size_t i = 0; i < order.size() && i < kLineCulprits; ++i) {
    const CulpritLoss& c = *order[i];
    out += (i ? ", " : " ") + percent(c.gpu_s, gpu_seconds_) + " " + c.cause + " on " + place_text(c.target, c.host, c.gpu);
  }
  if (order.size() > kLineCulprits) out += ", " + std::to_string(order.size() - kLineCulprits) + " more";
  return out + "; fixing them gives back " + percent(fixable_, gpu_seconds_);
}

std::string exclude_hosts_text(const json& alarms, const RankTable& ranks) {
  std::set<std::string> hosts;
  if (!alarms.is_array()) return {};
  for (const json& a : alarms) {
    if (!a.is_object() || a.value("cause", "") != "worker" || !a.contains("cleared_step") ||
        !a.at("cleared_step").is_null()) {
      continue;
    }
    // A target read from a report: a culprit the analysis names, or "host:NAME" (a host named
    // by hand or by another tool that writes the same report).
    const std::string text = a.value("target", "");
    const std::optional<Culprit> target = Culprit::parse(text);
    const int rank = target ? target->rank_index() : -1;
    std::string host;
    if (rank >= 0 && static_cast<size_t>(rank) < ranks.size()) host = ranks[static_cast<size_t>(rank)].host;
    if (text.rfind("host:", 0) == 0) host = text.substr(5);
    if (hostname_chars(host)) hosts.insert(host);
  }
  std::string out;
  for (const std::string& h : hosts) out += h + "\n";
  return out;
}

}  // namespace sp::online
