#include "rank_chain.h"

#include <algorithm>
#include <limits>
#include <utility>

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
  std::vector<Frame> stack;  // one for all roots
  for (int root : roots) {
    stack.assign(1, Frame{root, 0, spans[root].s});
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
  // (Per owner, indexed from the lowest logical: a rank's ops are consecutive in the model.)
  int base = std::numeric_limits<int>::max(), top = -1;
  for (const Piece& p : pieces) {
    base = std::min(base, p.owner);
    top = std::max(top, p.owner);
  }
  std::vector<int> positive(pieces.empty() ? 0 : static_cast<size_t>(top - base + 1), 0);
  for (const Piece& p : pieces) positive[static_cast<size_t>(p.owner - base)] += p.e > p.s ? 1 : 0;
  std::vector<Piece> kept;
  kept.reserve(pieces.size());
  std::vector<char> has_piece(positive.size(), 0);
  for (Piece& p : pieces) {
    const auto o = static_cast<size_t>(p.owner - base);
    if (p.e > p.s || (positive[o] == 0 && !has_piece[o])) {
      has_piece[o] = 1;
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
  if (spans.empty()) return;
  // host logical -> (clipped) end, indexed from the lowest (a rank's ops are consecutive)
  int base = std::numeric_limits<int>::max(), top = -1;
  for (const Span& s : spans) {
    base = std::min(base, s.logical);
    top = std::max(top, s.logical);
  }
  std::vector<double> op_end(static_cast<size_t>(top - base + 1), 0.0);
  for (const Span& s : spans) op_end[static_cast<size_t>(s.logical - base)] = s.e;
  // (host logical, comm position) for each launch, then grouped by host op in logical order
  std::vector<std::pair<int, int>> launches;
  for (int c = 0; c < static_cast<int>(comm_ops.size()); ++c) {
    const LogicalOp& op = m.ops[comm_ops[c].logical];
    const int pi = piece_ending_by(*pieces, op.start, eps);
    if (pi < 0) continue;
    const int owner = (*pieces)[pi].owner;
    if (op.start <= op_end[static_cast<size_t>(owner - base)] + eps) launches.emplace_back(owner, c);
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> cs;
  for (size_t from = 0; from < launches.size();) {
    const int owner = launches[from].first;
    cs.clear();
    for (; from < launches.size() && launches[from].first == owner; ++from) cs.push_back(launches[from].second);
    const double a_end = op_end[static_cast<size_t>(owner - base)];
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

// Adds one rank's nodes to the model, in the order the steps below need them.
class ChainBuilder {
 public:
  ChainBuilder(StepModel* m, int rank, const std::vector<CommStreamOp>& comm_ops, double eps)
      : m_(*m), rank_(rank), comm_ops_(comm_ops), eps_(eps), consumed_(comm_ops.size(), 0) {
    // A rank's ops are consecutive in the model: its comm nodes are indexed from the lowest.
    int top = -1;
    for (const CommStreamOp& c : comm_ops) {
      comm_base_ = std::min(comm_base_, c.logical);
      top = std::max(top, c.logical);
    }
    if (top >= 0) comm_node_.assign(static_cast<size_t>(top - comm_base_ + 1), -1);
  }

  // The rank's step start: everything of the rank that waits for nothing else waits for it.
  void add_start(double step_start_s) {
    step_start_ = step_start_s;
    start_node_ = static_cast<int>(m_.nodes.size());
    m_.starts[rank_] = start_node_;
    m_.nodes.push_back(node(-1, NodeRole::kStart, step_start_s, step_start_s));
  }

  // The host ops as time-ordered pieces: nesting resolved, cut at communication launches, and
  // the time an op spent blocked on its own collectives taken out.
  void cut_host_ops(const std::vector<int>& host_ops) {
    std::vector<int> roots;
    const std::vector<Span> spans = nest_host_ops(m_, host_ops, eps_, &roots, &m_.clamped);
    std::vector<double> launches;
    for (const CommStreamOp& c : comm_ops_) launches.push_back(m_.ops[c.logical].start);
    pieces_ = cut_at_launches(flatten(spans, roots), launches, eps_);
    split_waits(m_, spans, comm_ops_, eps_, &pieces_, &consumed_);
  }

  // Host nodes: one chain in time order.
  void add_host_nodes() {
    piece_node_.assign(pieces_.size(), -1);
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const Piece& p = pieces_[i];
      if (p.removed) continue;
      Node n = node(p.owner, NodeRole::kCompute, p.s, p.e);
      n.duration = p.e - p.s;
      n.deps.push_back(host_nodes_.empty() ? start_node_ : host_nodes_.back());
      piece_node_[i] = static_cast<int>(m_.nodes.size());
      host_nodes_.push_back(piece_node_[i]);
      LogicalOp& op = m_.ops[p.owner];
      if (op.first_node < 0) op.first_node = piece_node_[i];
      op.own += n.duration;
      m_.nodes.push_back(std::move(n));
    }
  }

  // Communication nodes: after the piece that launched them and the previous op of their
  // stream; then the pieces that waited for them (DDP's bucket wait) get their edges.
  void add_comm_nodes() {
    std::vector<int> order(comm_ops_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const double sa = m_.ops[comm_ops_[a].logical].start, sb = m_.ops[comm_ops_[b].logical].start;
      return sa != sb ? sa < sb : comm_ops_[a].logical < comm_ops_[b].logical;
    });
    for (int c : order) add_comm_node(comm_ops_[static_cast<size_t>(c)]);
    for (size_t i = 0; i < pieces_.size(); ++i) {
      if (piece_node_[i] < 0) continue;
      for (int logical : pieces_[i].waits_for) m_.nodes[piece_node_[i]].deps.push_back(comm_node_of(logical));
    }
  }

  // A host op that starts right after a collective ended (in the gap before it) waited for it:
  // a blocking call, or the optimizer waiting for the gradients.
  void add_waits_for_comm() {
    std::vector<int> by_end(comm_ops_.size());
    for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = static_cast<int>(i);
    std::sort(by_end.begin(), by_end.end(), [&](int a, int b) {
      return m_.ops[comm_ops_[a].logical].end < m_.ops[comm_ops_[b].logical].end;
    });
    size_t next = 0;
    double prev_end = -std::numeric_limits<double>::infinity();
    for (int node : host_nodes_) {
      const double start = m_.nodes[node].start;
      for (; next < by_end.size(); ++next) {
        const int c = by_end[next];
        const double end = m_.ops[comm_ops_[c].logical].end;
        if (end > start + eps_) break;
        if (!consumed_[c] && end >= prev_end - eps_) {
          m_.nodes[node].deps.push_back(comm_node_of(comm_ops_[c].logical));
          consumed_[c] = 1;
        }
      }
      prev_end = m_.nodes[node].end;
    }
  }

  // The step-end marker: the rank's step is over when its chain and all its comm are done.
  void add_marker(double step_end_s) {
    Node marker = node(-1, NodeRole::kMarker, 0, 0);
    double dep_end = step_start_;
    marker.deps.push_back(host_nodes_.empty() ? start_node_ : host_nodes_.back());
    if (!host_nodes_.empty()) dep_end = m_.nodes[host_nodes_.back()].end;
    for (size_t c = 0; c < comm_ops_.size(); ++c) {
      if (consumed_[c]) continue;
      marker.deps.push_back(comm_node_of(comm_ops_[c].logical));
      dep_end = std::max(dep_end, m_.ops[comm_ops_[c].logical].end);
    }
    marker.start = marker.end = std::max(dep_end, step_end_s);
    m_.markers[rank_] = static_cast<int>(m_.nodes.size());
    m_.nodes.push_back(std::move(marker));
  }

 private:
  Node node(int logical, NodeRole role, double start, double end) const {
    Node n;
    n.logical = logical;
    n.rank = rank_;
    n.role = role;
    n.start = start;
    n.end = end;
    return n;
  }

  void add_comm_node(const CommStreamOp& c) {
    LogicalOp& op = m_.ops[c.logical];
    Node n = node(c.logical, NodeRole::kComm, op.start, op.end);
    const int pi = piece_ending_by(pieces_, op.start, eps_);
    if (pi >= 0) n.deps.push_back(piece_node_[static_cast<size_t>(pi)]);
    const auto it = std::find_if(stream_last_.begin(), stream_last_.end(),
                                 [&c](const std::pair<uint64_t, int>& e) { return e.first == c.stream; });
    // Stream order only where the recorded times show it held (gloo may run two ops of one
    // group at once); otherwise the edge would force a serialisation that never happened.
    if (it != stream_last_.end() && m_.ops[it->second].end <= op.start + eps_) {
      n.deps.push_back(comm_node_of(it->second));
    }
    // An op issued while the rank's thread had nothing else to do, right after other
    // communication ended, waited for it: a blocking send before the next receive. (Without
    // the edge the receive's launch delay would hold the send, and the ideal would spread that
    // over every rank that has the same op.)
    const double idle_from = pi >= 0 ? pieces_[static_cast<size_t>(pi)].e : step_start_;
    const auto by_end = [](const Ended& e, double t) { return e.end < t; };
    for (auto e = std::lower_bound(ended_.begin(), ended_.end(), idle_from - eps_, by_end);
         e != ended_.end() && e->end <= op.start + eps_; ++e) {
      if (std::find(n.deps.begin(), n.deps.end(), e->node) == n.deps.end()) n.deps.push_back(e->node);
    }
    if (n.deps.empty()) n.deps.push_back(start_node_);
    if (it != stream_last_.end()) it->second = c.logical;
    else stream_last_.emplace_back(c.stream, c.logical);
    const int node = static_cast<int>(m_.nodes.size());
    comm_node_[static_cast<size_t>(c.logical - comm_base_)] = node;
    // After those that ended at the same time, as a multimap keeps them.
    const auto at = std::upper_bound(ended_.begin(), ended_.end(), op.end,
                                     [](double t, const Ended& e) { return t < e.end; });
    ended_.insert(at, Ended{op.end, node});
    op.first_node = node;
    m_.nodes.push_back(std::move(n));
  }

  StepModel& m_;
  const int rank_;
  const std::vector<CommStreamOp>& comm_ops_;
  const double eps_;
  double step_start_ = 0;
  int start_node_ = -1;
  std::vector<Piece> pieces_;
  std::vector<char> consumed_;       // per comm op: a host piece or the pieces' waits depend on it
  std::vector<int> piece_node_;      // node per piece, -1 for removed pieces
  std::vector<int> host_nodes_;      // the host chain, in time order
  int comm_node_of(int logical) const { return comm_node_[static_cast<size_t>(logical - comm_base_)]; }

  struct Ended {
    double end;  // recorded
    int node;
  };

  int comm_base_ = std::numeric_limits<int>::max();  // the rank's lowest comm logical
  std::vector<int> comm_node_;       // logical - comm_base_ -> node (-1 before it is added)
  // stream -> logical of its latest op so far. A rank has a few streams (its groups, its p2p
  // peers): a list searched in order, not a hash map with a node per stream and rank.
  std::vector<std::pair<uint64_t, int>> stream_last_;
  std::vector<Ended> ended_;         // comm nodes so far, by recorded end (ties: in added order)
};

}  // namespace

void build_rank_chain(StepModel* model, int rank, const std::vector<int>& host_ops,
                      const std::vector<CommStreamOp>& comm_ops, double step_start_s,
                      double step_end_s, double eps) {
  ChainBuilder b(model, rank, comm_ops, eps);
  b.add_start(step_start_s);
  b.cut_host_ops(host_ops);
  b.add_host_nodes();
  b.add_comm_nodes();
  b.add_waits_for_comm();
  b.add_marker(step_end_s);
}

}  // namespace sp::online
