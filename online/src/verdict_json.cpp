#include "verdict_json.h"

#include <cmath>

namespace sp::online {
namespace {

// JSON has no NaN/inf; a non-finite number becomes null rather than an invalid file.
nlohmann::ordered_json num(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json nums(const std::vector<double>& xs) {
  auto a = nlohmann::ordered_json::array();
  for (double x : xs) a.push_back(num(x));
  return a;
}

}  // namespace

nlohmann::ordered_json verdict_to_json(const StepVerdict& v) {
  nlohmann::ordered_json j;
  j["step"] = v.step;
  j["analyzed"] = v.analyzed;
  if (!v.analyzed) {
    j["skip_reason"] = v.skip_reason;
    return j;
  }
  j["time_s"] = num(v.time_s);
  j["replay_s"] = num(v.replay_s);
  j["nodelay_s"] = num(v.nodelay_s);
  j["ideal_s"] = num(v.ideal_s);
  j["S"] = num(v.S);
  j["launch_share"] = num(v.launch_share);
  j["fidelity_err"] = num(v.fidelity_err);
  j["cause"] = std::string(cause_name(v.cause));
  j["worst"] = v.worst;
  j["worst_S"] = num(v.worst_S);
  j["top_op"] = v.top_op;
  j["evidence"] = v.evidence;
  j["dp_size"] = v.dp_size;
  j["pp_size"] = v.pp_size;
  j["M_S"] = num(v.M_S);
  j["M_W"] = num(v.M_W);
  j["top_workers"] = v.top_workers;
  j["seq_corr"] = num(v.seq_corr);
  j["fb_corr"] = num(v.fb_corr);
  j["rank_dp"] = v.rank_dp;
  j["rank_stage"] = v.rank_stage;
  j["worker_S"] = nums(v.worker_S);
  j["dp_S"] = nums(v.dp_S);
  j["stage_S"] = nums(v.stage_S);
  auto ops = nlohmann::ordered_json::object();
  for (const auto& [type, s] : v.op_S) ops[type] = num(s);
  j["op_S"] = ops;
  return j;
}

}  // namespace sp::online
