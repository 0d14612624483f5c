#include "verdict_json.h"

#include "ledger.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

namespace sp::online {
namespace {

// `values` under `key` when small; else `key`_top ([index, value] of the kTopRanks largest,
// largest first) and `key`_median, so the record's size does not grow with the job.
void put_rank_vector(nlohmann::ordered_json& j, const std::string& key,
                     const std::vector<double>& values) {
  if (values.size() <= kWholeRankVectorMax) {
    j[key] = values;
    return;
  }
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t top = std::min(kTopRanks, order.size());
  // NaN (a rank without a score) sorts last: it is not a large score.
  auto larger = [&values](size_t a, size_t b) {
    const double x = values[a], y = values[b];
    if (std::isnan(y)) return !std::isnan(x);
    return x > y;
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    larger);
  auto pairs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < top; ++i) pairs.push_back({order[i], values[order[i]]});
  j[key + "_top"] = std::move(pairs);
  std::vector<double> sorted;  // the median of the ranks that have a score
  std::copy_if(values.begin(), values.end(), std::back_inserter(sorted),
               [](double x) { return !std::isnan(x); });
  if (sorted.empty()) return;
  const auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  j[key + "_median"] = *mid;
}

}  // namespace

nlohmann::ordered_json layout_to_json(const StepVerdict& v) {
  nlohmann::ordered_json j;
  j["event"] = "layout";
  j["world"] = v.rank_dp.size();
  j["dp_size"] = v.dp_size;
  j["pp_size"] = v.pp_size;
  j["rank_dp"] = v.rank_dp;
  j["rank_stage"] = v.rank_stage;
  return j;
}

bool layout_changed(const nlohmann::ordered_json& last, const StepVerdict& v) {
  if (last.is_null()) return true;
  return last.at("dp_size") != v.dp_size || last.at("pp_size") != v.pp_size ||
         last.at("rank_dp") != v.rank_dp || last.at("rank_stage") != v.rank_stage;
}

// Numbers go in as they are: JSON has no NaN or infinity, and dump() writes those as null.
nlohmann::ordered_json verdict_to_json(const StepVerdict& v) {
  nlohmann::ordered_json j;
  j["event"] = "step";  // alarm records (alarms.cpp) say "alarm"
  j["step"] = v.step;
  j["analyzed"] = v.analyzed;
  if (!v.analyzed) {
    j["skip_reason"] = v.skip_reason;
    return j;
  }
  j["time_s"] = v.time_s;
  j["replay_s"] = v.replay_s;
  j["nodelay_s"] = v.nodelay_s;
  j["ideal_s"] = v.ideal_s;
  j["S"] = v.S;
  j["launch_share"] = v.launch_share;
  j["fidelity_err"] = v.fidelity_err;
  j["cause"] = std::string(cause_name(v.cause));
  j["worst"] = v.worst.text();
  if (!v.worst_host.empty()) j["worst_host"] = v.worst_host;
  if (v.worst_device >= 0) j["worst_gpu"] = v.worst_device;
  j["worst_S"] = v.worst_S;
  j["top_op"] = v.top_op;
  j["evidence"] = v.evidence;
  j["lost"] = step_loss_json(step_loss(v));  // the ledger's entry (ledger.h)
  if (v.null_ready) {
    j["S_null"] = v.S_null;
    j["jitter"] = v.jitter;
    j["p_S"] = v.p_S;
    j["p"] = v.p;
    if (!v.named_by.empty()) j["named_by"] = v.named_by;
    if (!v.persist.target.empty()) {
      j["persist"] = {{"target", v.persist.target.text()}, {"led", v.persist.led},           {"of", v.persist.of},
                      {"rival_led", v.persist.rival_led}, {"ahead", v.persist.ahead}, {"ahead_of", v.persist.ahead_of},
                      {"p", v.persist.p}};
    }
    if (!v.cpu_work.target.empty()) {
      const CpuWorkEvidence& w = v.cpu_work;
      j["cpu_work"] = {{"target", w.target.text()}, {"above", w.above}, {"of", w.of}, {"most", w.most},
                       {"excess", w.excess},        {"lead", w.lead},   {"p", w.p}};
    }
  }
  j["dp_size"] = v.dp_size;
  j["pp_size"] = v.pp_size;
  j["M_S"] = v.M_S;
  j["M_W"] = v.M_W;
  j["top_workers"] = v.top_workers;
  j["seq_corr"] = v.seq_corr;
  j["fb_corr"] = v.fb_corr;
  put_rank_vector(j, "worker_S", v.worker_S);
  put_rank_vector(j, "dp_S", v.dp_S);
  j["stage_S"] = v.stage_S;
  auto ops = nlohmann::ordered_json::object();
  for (const auto& [type, s] : v.op_S) ops[type] = s;
  j["op_S"] = ops;
  return j;
}

}  // namespace sp::online
