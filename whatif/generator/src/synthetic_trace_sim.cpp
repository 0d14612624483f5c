// Event replay of one step: Kahn's order over "happens after" edges, where a node that takes
// part in rendezvous finishes only once every member of each has been issued. Linear in the
// size of the graph.
#include "synthetic_trace_sim.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace sp::whatif::synth {

void simulate_step(const StepGraph& graph, const std::vector<double>& worker_ready,
                   const StepDurations& durations, std::vector<double>& start,
                   std::vector<double>& end) {
  const size_t n = graph.nodes.size();
  const size_t num_rv = graph.rendezvous_kind.size();
  start.assign(n, 0.0);
  end.assign(n, 0.0);

  std::vector<uint32_t> preds_left(n);
  std::vector<uint32_t> rv_open(n);  // rendezvous of the node not complete yet
  std::vector<uint32_t> ready;
  ready.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    preds_left[i] = static_cast<uint32_t>(graph.predecessors.count(i));
    rv_open[i] = static_cast<uint32_t>(graph.node_rendezvous.count(i));
    if (preds_left[i] == 0) ready.push_back(static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> members_unissued(num_rv);
  std::vector<double> latest_issue(num_rv, -std::numeric_limits<double>::infinity());
  for (size_t r = 0; r < num_rv; ++r) {
    members_unissued[r] = static_cast<uint32_t>(graph.rendezvous_members.count(r));
  }

  size_t finished = 0;
  auto finish = [&](uint32_t node) {
    ++finished;
    for (const uint32_t* s = graph.successors.begin(node); s != graph.successors.end(node); ++s) {
      if (--preds_left[*s] == 0) ready.push_back(*s);
    }
  };

  // `ready` works as a stack: any order of ready nodes gives the same times.
  while (!ready.empty()) {
    const uint32_t node = ready.back();
    ready.pop_back();
    double issue = worker_ready[static_cast<size_t>(graph.nodes[node].worker)];
    for (const uint32_t* p = graph.predecessors.begin(node); p != graph.predecessors.end(node);
         ++p) {
      issue = std::max(issue, end[*p]);
    }
    issue += durations.gap[node];
    start[node] = issue;
    end[node] = issue + durations.own[node];
    if (rv_open[node] == 0) finish(node);
    for (const uint32_t* r = graph.node_rendezvous.begin(node);
         r != graph.node_rendezvous.end(node); ++r) {
      latest_issue[*r] = std::max(latest_issue[*r], issue);
      if (--members_unissued[*r] != 0) continue;
      const double done = latest_issue[*r] + durations.transfer[*r];
      for (const uint32_t* m = graph.rendezvous_members.begin(*r);
           m != graph.rendezvous_members.end(*r); ++m) {
        end[*m] = std::max(end[*m], done);
        if (--rv_open[*m] == 0) finish(*m);
      }
    }
  }

  if (finished != n) {
    for (size_t i = 0; i < n; ++i) {
      if (preds_left[i] != 0 || rv_open[i] != 0) {
        throw std::logic_error("synthetic trace: schedule deadlocks (worker " +
                               std::to_string(graph.nodes[i].worker) + " stuck at its node " +
                               std::to_string(i) + ")");
      }
    }
  }
}

}  // namespace sp::whatif::synth
