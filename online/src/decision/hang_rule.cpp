#include "hang_rule.h"

#include <algorithm>
#include <vector>

#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

std::string type_of(const StepModel& m, const Node& n) {
  if (n.logical < 0) return "step-end";
  return m.type_names[static_cast<size_t>(m.ops[static_cast<size_t>(n.logical)].type)];
}

// A rank's longest stretch of its own: a compute segment, or the untraced time before any of
// its nodes (a comm node's launch delay is the time after its rank's previous op ended and before
// it launched: its own, not the peers'; waiting for the peers is the comm node's work).
struct OwnStretch {
  double seconds = 0;
  std::string where;  // "in forward", "in untraced time before data-wait"
  std::string type;   // the op type, or "launch-delay"
};

std::vector<OwnStretch> own_stretches(const StepModel& m) {
  std::vector<OwnStretch> out(static_cast<size_t>(m.world));
  for (const Node& n : m.nodes) {
    if (n.role == NodeRole::kStart || n.rank < 0 || n.rank >= m.world) continue;
    OwnStretch& s = out[static_cast<size_t>(n.rank)];
    if (n.role == NodeRole::kCompute && n.duration > s.seconds) {
      s = {n.duration, "in " + type_of(m, n), type_of(m, n)};
    }
    if (n.launch_delay > s.seconds) {
      s = {n.launch_delay, "in untraced time before " + type_of(m, n), "launch-delay"};
    }
  }
  return out;
}

// How much later than every other member the rank entered a collective or transfer of the step
// (the largest over its groups), and that group's op type.
double entered_last_by(const StepModel& m, int rank, std::string* type) {
  double most = 0;
  for (const NodeList& g : m.groups) {
    int own = -1;
    double others = -1e300;
    for (const int i : g) {
      const Node& n = m.nodes[static_cast<size_t>(i)];
      if (n.rank == rank) {
        own = i;
      } else {
        others = std::max(others, n.start);
      }
    }
    if (own < 0 || g.size() < 2) continue;
    const double lag = m.nodes[static_cast<size_t>(own)].start - others;
    if (lag > most) {
      most = lag;
      *type = type_of(m, m.nodes[static_cast<size_t>(own)]);
    }
  }
  return most;
}

// The step's longest transfer (a comm node's work: after every member had entered).
const Node* longest_transfer(const StepModel& m) {
  const Node* best = nullptr;
  for (const Node& n : m.nodes) {
    if (n.role == NodeRole::kComm && (!best || n.duration > best->duration)) best = &n;
  }
  return best;
}

}  // namespace

HangFinding find_hang(const StepModel& m, double bound_s, double typical_s) {
  HangFinding out;
  if (!(bound_s > 0) || m.time_s < bound_s) return out;
  out.hang = true;
  out.stall_s = m.time_s - std::max(0.0, typical_s);
  const std::string over = "the step took " + fixed(m.time_s, 2) + " s, over the hang bound of " +
                           fixed(bound_s, 1) + " s";
  const std::vector<OwnStretch> own = own_stretches(m);
  int r = 0;
  double second = 0;  // the longest own stretch of any other rank
  for (int i = 1; i < m.world; ++i) {
    if (own[static_cast<size_t>(i)].seconds > own[static_cast<size_t>(r)].seconds) {
      second = own[static_cast<size_t>(r)].seconds;
      r = i;
    } else {
      second = std::max(second, own[static_cast<size_t>(i)].seconds);
    }
  }
  if (m.world > 0 && own[static_cast<size_t>(r)].seconds - second >= 0.5 * out.stall_s) {
    const OwnStretch& s = own[static_cast<size_t>(r)];
    out.rank = r;
    out.stopped_s = s.seconds;
    out.top_op = s.type;
    out.evidence = "rank " + std::to_string(r) + " stopped for " + fixed(s.seconds, 2) + " s " + s.where;
    std::string type;
    const double lag = entered_last_by(m, r, &type);
    if (lag > 0) out.evidence += " and entered " + type + " " + fixed(lag, 2) + " s after the others";
    out.evidence += "; " + over;
    return out;
  }
  const Node* t = longest_transfer(m);
  if (t != nullptr && t->duration >= 0.5 * out.stall_s && t->group >= 0) {
    out.top_op = type_of(m, *t);
    out.evidence = "every rank waited " + fixed(t->duration, 2) + " s in " + out.top_op + " after all " +
                   std::to_string(m.groups[static_cast<size_t>(t->group)].size()) +
                   " members had entered it: one stopped inside it, which the step's events cannot "
                   "tell (the hang line names the silent rank); " + over;
    return out;
  }
  out.evidence = "no rank's own ops or gaps explain it; " + over;
  return out;
}

}  // namespace sp::online
