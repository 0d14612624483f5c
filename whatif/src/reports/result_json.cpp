// JSON in the artifact's shapes. Python's json writes dict keys as strings and keeps insertion
// order; ordered_json does the same here.
#include "straggler_probe/whatif/result_json.h"

#include <fstream>
#include <stdexcept>

namespace sp::whatif {
namespace {

using nlohmann::ordered_json;

ordered_json steps_json(const std::vector<StepValue>& v) {
  ordered_json j = ordered_json::object();
  for (const auto& sv : v) j[std::to_string(sv.step)] = sv.value;
  return j;
}

ordered_json groups_json(const std::vector<GroupValue>& v) {
  ordered_json j = ordered_json::object();
  for (const auto& g : v) j[g.key] = g.value;
  return j;
}

ordered_json overall_json(const std::optional<Decomposition>& d) {
  return d ? groups_json(d->overall) : ordered_json(nullptr);
}

ordered_json per_step_json(const std::optional<Decomposition>& d) {
  if (!d) return nullptr;
  ordered_json j = ordered_json::object();
  for (const auto& sa : d->per_step) j[std::to_string(sa.step)] = groups_json(sa.groups);
  return j;
}

ordered_json explanation_json(const SlowdownExplanation& e) {
  ordered_json j = ordered_json::object();
  j["trem"] = e.trem;
  j["tadd"] = e.tadd;
  j["tori"] = e.tori;
  j["tideal"] = e.tideal;
  j["rem"] = e.rem;
  j["add"] = e.add;
  return j;
}

}  // namespace

ordered_json result_to_json(const AnalysisResult& r) {
  ordered_json j = ordered_json::object();
  ordered_json meta = ordered_json::object();
  meta["trial_name"] = r.job_meta.trial_name;
  meta["run_id"] = r.job_meta.run_id;
  meta["dp_size"] = r.job_meta.dp_size;
  meta["pp_size"] = r.job_meta.pp_size;
  meta["tp_size"] = r.job_meta.tp_size;
  meta["dsp_size"] = r.job_meta.dsp_size;
  meta["vpp_size"] = r.job_meta.vpp_size;
  meta["world_size"] = r.job_meta.world_size;
  j["job_meta"] = meta;
  j["step_t_base"] = steps_json(r.step_t_base);
  j["step_t_nodelay"] = steps_json(r.step_t_nodelay);
  j["step_t_noblk"] = steps_json(r.step_t_noblk);
  j["launch_slowdown"] = r.launch_slowdown;
  j["blocking_slowdown"] = r.blocking_slowdown;
  j["blocking_step_slowdown"] = steps_json(r.blocking_step_slowdown);
  j["launch_step_slowdown"] = steps_json(r.launch_step_slowdown);
  j["blocking_decompose_by_dp_rank"] = overall_json(r.blocking_by_dp_rank);
  j["launch_decompose_by_dp_rank"] = overall_json(r.launch_by_dp_rank);
  j["blocking_decompose_by_stage"] = overall_json(r.blocking_by_stage);
  j["launch_decompose_by_stage"] = overall_json(r.launch_by_stage);
  j["blocking_decompose_by_optype"] = overall_json(r.blocking_by_optype);
  j["launch_decompose_by_optype"] = overall_json(r.launch_by_optype);
  j["blocking_decompose_by_dp_rank_per_step"] = per_step_json(r.blocking_by_dp_rank);
  j["launch_decompose_by_dp_rank_per_step"] = per_step_json(r.launch_by_dp_rank);
  j["blocking_decompose_by_stage_per_step"] = per_step_json(r.blocking_by_stage);
  j["launch_decompose_by_stage_per_step"] = per_step_json(r.launch_by_stage);
  j["blocking_decompose_by_optype_per_step"] = per_step_json(r.blocking_by_optype);
  j["launch_decompose_by_optype_per_step"] = per_step_json(r.launch_by_optype);
  return j;
}

ordered_json ms_to_json(const SlowdownExplanation& ms) {
  ordered_json j = explanation_json(ms);
  j["Ms"] = ms.rem;
  return j;
}

ordered_json mw_to_json(const SlowdownExplanation& mw) {
  ordered_json j = explanation_json(mw);
  j["Mw"] = mw.rem;
  return j;
}

void write_json_file(const ordered_json& json, const std::string& path, int indent) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open " + path + " for writing");
  out << json.dump(indent);
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace sp::whatif
