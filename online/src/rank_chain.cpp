#include "rank_chain.h"

#include <algorithm>
#include <limits>
#include <map>

namespace sp::online {
namespace {

// A host op's interval after nesting has been resolved; children are nested host ops.
struct Span {
  int logical = 0;
  double s = 0, e = 0;
  std::vector<int> children;  // indices into the span vector, in time order
};

// A stretch of time owned by one host op (the innermost one running then).
struct Piece {
  int owner = 0;  // logical op
  double s = 0, e = 0;
  bool removed = false;           // time the op spent blocked on its own collectives
  std::vector<int> waits_for;     // logical comm ops this piece waits for
};

// Sorts host ops into a forest: an op that starts inside another one is nested in it (a GC
// pause inside forward). An op that starts inside another but ends after it is clipped to it.
std::vector<Span> nest_host_ops(const StepModel& m, const std::vector<int>& host_ops, double eps,
                                std::vector<int>* roots, uint64_t* clamped) {
  std::vector<Span> spans;
  spans.reserve(host_ops.size());
  for (int idx : host_ops) spans.push_back({idx, m.ops[idx].start, m.ops[idx].end, {}});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.s != b.s) return a.s < b.s;
    if (a.e != b.e) return a.e > b.e;
    return a.logical < b.logical;
  });
  std::vector<int> stack;
  for (int i = 0; i < static_cast<int>(spans.size()); ++i) {
    while (!stack.empty() && spans[stack.back()].e <= spans[i].s + eps) stack.pop_back();
    if (stack.empty()) {
      roots->push_back(i);
    } else {
      Span& parent = spans[stack.back()];
      if (spans[i].e > parent.e) {
        spans[i].e = parent.e;
        ++*clamped;
      }
      parent.children.push_back(i);
    }
    stack.push_back(i);
  }
  return spans;
}

// Flattens the forest into time-ordered pieces: each op owns the gaps between its children.
// Iterative, so that a pathological nesting depth cannot overflow the stack.
std::vector<Piece> flatten(const std::vector<Span>& spans, const std::vector<int>& roots) {
  std::vector<Piece> pieces;
  struct Frame {
    int span;
    size_t next_child;
    double pos;
  };
  for (int root : roots) {
    std::vector<Frame> stack{{root, 0, spans[root].s}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const Span& sp = spans[f.span];
      if (f.next_child < sp.children.size()) {
        const Span& child = spans[sp.children[f.next_child]];
        pieces.push_back({sp.logical, f.pos, std::max(f.pos, child.s), false, {}});
        f.pos = std::max(f.pos, child.e);
        ++f.next_child;
        stack.push_back({sp.children[f.next_child - 1], 0, child.s});
      } else {
        pieces.push_back({sp.logical, f.pos, std::max(f.pos, sp.e), false, {}});
        stack.pop_back();
      }
    }
  }
  // Drop empty pieces of ops that have a non-empty one; keep one piece per op in any case.
  std::map<int, int> positive;
  for (const Piece& p : pieces) positive[p.owner] += p.e > p.s ? 1 : 0;
  std::vector<Piece> kept;
  std::map<int, bool> has_piece;
  for (Piece& p : pieces) {
    if (p.e > p.s || (positive[p.owner] == 0 && !has_piece[p.owner])) {
      has_piece[p.owner] = true;
      kept.push_back(std::move(p));
    }
  }
  return kept;
}

// Cuts pieces where communication ops are launched, so that each launch has a piece ending at
// it to depend on (DDP launches bucket all-reduces part-way through backward).
std::vector<Piece> cut_at_launches(const std::vector<Piece>& pieces, std::vector<double> launches,
                                   double eps) {
  std::sort(launches.begin(), launches.end());
  std::vector<Piece> out;
  out.reserve(pieces.size() + launches.size());
  for (const Piece& p : pieces) {
    double pos = p.s;
    auto it = std::upper_bound(launches.begin(), launches.end(), p.s + eps);
    for (; it != launches.end() && *it < p.e - eps; ++it) {
      if (*it <= pos + eps) continue;
      out.push_back({p.owner, pos, *it, false, {}});
      pos = *it;
    }
    out.push_back({p.owner, pos, p.e, false, {}});
  }
  return out;
}

// The latest piece (not removed) that ends by time t: what an op launched at t depends on.
// Pieces are in start order and do not overlap, so it is at or just before the last piece that
// starts by t.
int piece_ending_by(const std::vector<Piece>& pieces, double t, double eps) {
  auto it = std::upper_bound(pieces.begin(), pieces.end(), t + eps,
                             [](double v, const Piece& p) { return v < p.s; });
  for (int i = static_cast<int>(it - pieces.begin()) - 1; i >= 0; --i) {
    if (!pieces[i].removed && pieces[i].e <= t + eps) return i;
  }
  return -1;
}

// A host op that launched collectives and then ended after some of them finished waited for
// them: from its last launch until the last of those finished it was blocked, not working
// (DDP's reducer waits for every bucket at the end of backward). That stretch is removed from
// its duration, and the rest of the op depends on those collectives instead.
void split_waits(const StepModel& m, const std::vector<Span>& spans,
                 const std::vector<CommStreamOp>& comm_ops, double eps,
                 std::vector<Piece>* pieces, std::vector<char>* consumed) {
  std::map<int, double> op_end;  // host logical -> (clipped) end
  for (const Span& s : spans) op_end[s.logical] = s.e;
  std::map<int, std::vector<int>> launched;  // host logical -> comm positions
  for (int c = 0; c < static_cast<int>(comm_ops.size()); ++c) {
    const LogicalOp& op = m.ops[comm_ops[c].logical];
    const int pi = piece_ending_by(*pieces, op.start, eps);
    if (pi < 0) continue;
    const int owner = (*pieces)[pi].owner;
    if (op.start <= op_end[owner] + eps) launched[owner].push_back(c);
  }
  for (auto& [owner, cs] : launched) {
    const double a_end = op_end[owner];
    double last_launch = -std::numeric_limits<double>::infinity();
    for (int c : cs) last_launch = std::max(last_launch, m.ops[comm_ops[c].logical].start);
    std::vector<int> waited;
    double wait_end = last_launch;
    for (int c : cs) {
      const LogicalOp& op = m.ops[comm_ops[c].logical];
      if (op.end > last_launch && op.end <= a_end + eps) {
        waited.push_back(c);
        wait_end = std::max(wait_end, op.end);
      }
    }
    if (waited.empty()) continue;
    int tail = -1;
    for (int i = 0; i < static_cast<int>(pieces->size()); ++i) {
      Piece& p = (*pieces)[i];
      if (p.owner != owner || p.removed) continue;
      if (p.s >= last_launch - eps && p.e <= wait_end + eps) {
        p.removed = true;
      } else if (p.s >= last_launch - eps && p.s < wait_end && p.e > wait_end) {
        p.s = wait_end;
      }
      if (!p.removed && p.s >= wait_end - eps && tail < 0) tail = i;
    }
    if (tail < 0) {
      // The op ended with the wait: an empty piece at its end carries the dependency.
      int pos = 0;
      while (pos < static_cast<int>(pieces->size()) && (*pieces)[pos].s < a_end) ++pos;
      pieces->insert(pieces->begin() + pos, Piece{owner, a_end, a_end, false, {}});
      tail = pos;
    }
    for (int c : waited) {
      (*pieces)[tail].waits_for.push_back(comm_ops[c].logical);
      (*consumed)[c] = 1;
    }
  }
}

}  // namespace

void build_rank_chain(StepModel* model, int rank, const std::vector<int>& host_ops,
                      const std::vector<CommStreamOp>& comm_ops, double step_start_s,
                      double step_end_s, double eps) {
  StepModel& m = *model;
  // The rank's step start: everything of the rank that waits for nothing else waits for it.
  const int start_node = static_cast<int>(m.nodes.size());
  {
    Node start;
    start.rank = rank;
    start.role = NodeRole::kStart;
    start.start = start.end = step_start_s;
    m.starts[rank] = start_node;
    m.nodes.push_back(std::move(start));
  }
  std::vector<int> roots;
  const std::vector<Span> spans = nest_host_ops(m, host_ops, eps, &roots, &m.clamped);
  std::vector<double> launches;
  for (const CommStreamOp& c : comm_ops) launches.push_back(m.ops[c.logical].start);
  std::vector<Piece> pieces = cut_at_launches(flatten(spans, roots), launches, eps);
  std::vector<char> consumed(comm_ops.size(), 0);
  split_waits(m, spans, comm_ops, eps, &pieces, &consumed);

  // Host nodes: one chain in time order.
  std::vector<int> host_nodes;  // node index per kept piece
  std::vector<int> piece_node(pieces.size(), -1);
  for (int i = 0; i < static_cast<int>(pieces.size()); ++i) {
    const Piece& p = pieces[i];
    if (p.removed) continue;
    Node n;
    n.logical = p.owner;
    n.rank = rank;
    n.role = NodeRole::kCompute;
    n.start = p.s;
    n.end = p.e;
    n.duration = p.e - p.s;
    n.deps.push_back(host_nodes.empty() ? start_node : host_nodes.back());
    piece_node[i] = static_cast<int>(m.nodes.size());
    host_nodes.push_back(piece_node[i]);
    LogicalOp& op = m.ops[p.owner];
    if (op.first_node < 0) op.first_node = piece_node[i];
    op.own += n.duration;
    m.nodes.push_back(std::move(n));
  }

  // Communication nodes: after the piece that launched them and the previous op of their stream.
  std::map<int, int> comm_node;  // logical -> node
  std::vector<int> order(comm_ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const double sa = m.ops[comm_ops[a].logical].start, sb = m.ops[comm_ops[b].logical].start;
    return sa != sb ? sa < sb : comm_ops[a].logical < comm_ops[b].logical;
  });
  std::map<uint64_t, int> stream_last;  // stream -> logical of its latest op so far
  std::multimap<double, int> ended;     // comm ops with nodes so far, by recorded end
  for (int c : order) {
    const int logical = comm_ops[c].logical;
    LogicalOp& op = m.ops[logical];
    Node n;
    n.logical = logical;
    n.rank = rank;
    n.role = NodeRole::kComm;
    n.start = op.start;
    n.end = op.end;
    const int pi = piece_ending_by(pieces, op.start, eps);
    if (pi >= 0) n.deps.push_back(piece_node[pi]);
    auto it = stream_last.find(comm_ops[c].stream);
    // Stream order only where the recorded times show it held (gloo may run two ops of one
    // group at once); otherwise the edge would force a serialisation that never happened.
    if (it != stream_last.end() && m.ops[it->second].end <= op.start + eps) {
      n.deps.push_back(comm_node.at(it->second));
    }
    // An op issued while the rank's thread had nothing else to do, right after other
    // communication ended, waited for it: a blocking send before the next receive. (Without
    // the edge the receive's launch delay would hold the send, and the ideal would spread that
    // over every rank that has the same op.)
    const double idle_from = pi >= 0 ? pieces[static_cast<size_t>(pi)].e : step_start_s;
    for (auto e = ended.lower_bound(idle_from - eps); e != ended.end() && e->first <= op.start + eps; ++e) {
      if (std::find(n.deps.begin(), n.deps.end(), e->second) == n.deps.end()) n.deps.push_back(e->second);
    }
    if (n.deps.empty()) n.deps.push_back(start_node);
    stream_last[comm_ops[c].stream] = logical;
    comm_node[logical] = static_cast<int>(m.nodes.size());
    ended.emplace(op.end, comm_node[logical]);
    op.first_node = comm_node[logical];
    m.nodes.push_back(std::move(n));
  }
  for (int i = 0; i < static_cast<int>(pieces.size()); ++i) {
    if (piece_node[i] < 0) continue;
    for (int logical : pieces[i].waits_for) m.nodes[piece_node[i]].deps.push_back(comm_node.at(logical));
  }

  // A host op that starts right after a collective ended (in the gap before it) waited for it:
  // a blocking call, or the optimizer waiting for the gradients.
  std::vector<int> by_end(comm_ops.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = static_cast<int>(i);
  std::sort(by_end.begin(), by_end.end(), [&](int a, int b) {
    return m.ops[comm_ops[a].logical].end < m.ops[comm_ops[b].logical].end;
  });
  size_t next = 0;
  double prev_end = -std::numeric_limits<double>::infinity();
  for (int node : host_nodes) {
    const double start = m.nodes[node].start;
    for (; next < by_end.size(); ++next) {
      const int c = by_end[next];
      const double end = m.ops[comm_ops[c].logical].end;
      if (end > start + eps) break;
      if (!consumed[c] && end >= prev_end - eps) {
        m.nodes[node].deps.push_back(comm_node.at(comm_ops[c].logical));
        consumed[c] = 1;
      }
    }
    prev_end = m.nodes[node].end;
  }

  // The step-end marker: the rank's step is over when its chain and all its comm are done.
  Node marker;
  marker.rank = rank;
  marker.role = NodeRole::kMarker;
  double dep_end = step_start_s;
  marker.deps.push_back(host_nodes.empty() ? start_node : host_nodes.back());
  if (!host_nodes.empty()) dep_end = m.nodes[host_nodes.back()].end;
  for (size_t c = 0; c < comm_ops.size(); ++c) {
    if (consumed[c]) continue;
    marker.deps.push_back(comm_node.at(comm_ops[c].logical));
    dep_end = std::max(dep_end, m.ops[comm_ops[c].logical].end);
  }
  marker.start = marker.end = std::max(dep_end, step_end_s);
  m.markers[rank] = static_cast<int>(m.nodes.size());
  m.nodes.push_back(std::move(marker));
}

}  // namespace sp::online
