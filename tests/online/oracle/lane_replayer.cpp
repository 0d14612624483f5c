#include "lane_replayer.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

namespace sp::online::testing {

StepReplayer::StepReplayer(const StepModel& m) : starts_(m.starts), markers_(m.markers) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    const bool comm = n.role == NodeRole::kComm;
    const int32_t label = n.logical >= 0 ? m.ops[static_cast<size_t>(n.logical)].type : -1;
    std::string name = "r";
    name += std::to_string(n.rank);
    name += '.';
    name += std::to_string(i);
    graph_.add_node(std::move(name),
                    comm ? whatif::NodeKind::kComm : whatif::NodeKind::kCompute, label, n.rank,
                    n.role == NodeRole::kMarker);
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    for (int d : m.nodes[i].deps) graph_.add_dependency(static_cast<whatif::NodeId>(i), d);
  }
  // Every rank of the job is in this one graph, so no group spans lanes: lanes are scenarios.
  for (const auto& g : m.groups) graph_.add_comm_group(std::span<const int>(g), false);
}

LaneOutputs StepReplayer::run(const LaneInputs& in, const std::vector<size_t>& cell_lanes) {
  auto it = simulators_.find(in.lanes);
  if (it == simulators_.end()) {
    // One lane per "step" of the layout: the simulator reports a step end per step, and each
    // scenario needs its own.
    whatif::LaneLayout layout;
    layout.num_steps = static_cast<int32_t>(in.lanes);
    layout.lanes_per_step = 1;
    it = simulators_.emplace(in.lanes, whatif::Simulator(graph_, layout)).first;
  }
  whatif::Simulator& sim = it->second;
  whatif::SimInput input;
  input.work = in.work;
  input.launch_delay = in.delay;
  const whatif::SimResult r = sim.run(input);
  LaneOutputs out;
  out.step_time.assign(in.lanes, 0.0);
  for (size_t l = 0; l < in.lanes; ++l) {
    for (size_t k = 0; k < markers_.size(); ++k) {
      const double t = r.end[static_cast<size_t>(markers_[k]) * in.lanes + l] -
                       r.start[static_cast<size_t>(starts_[k]) * in.lanes + l];
      out.step_time[l] = std::max(out.step_time[l], t);
    }
  }
  const size_t nodes = r.start.size() / in.lanes;
  out.start.reserve(nodes * cell_lanes.size());
  out.end.reserve(nodes * cell_lanes.size());
  for (size_t v = 0; v < nodes; ++v) {
    for (size_t l : cell_lanes) {
      out.start.push_back(r.start[v * in.lanes + l]);
      out.end.push_back(r.end[v * in.lanes + l]);
    }
  }
  return out;
}

}  // namespace sp::online::testing
