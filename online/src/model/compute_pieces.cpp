#include "compute_pieces.h"

#include <algorithm>
#include <limits>

namespace sp::online {
namespace {

// Sorts compute ops into a forest: an op that starts inside another one is nested in it (a GC
// pause inside forward). An op that starts inside another but ends after it is clipped to it.
// Into s.spans (in start order), s.roots, and each span's children (in time order) as the CSR
// s.child_begin / s.children.
void nest_compute_ops(const StepModel& m, const std::vector<int>& compute_ops, double eps, ComputeScratch& s,
                   uint64_t* clamped) {
  std::vector<Span>& spans = s.spans;
  spans.clear();
  for (int idx : compute_ops) spans.push_back({idx, m.ops[idx].start, m.ops[idx].end});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.s != b.s) return a.s < b.s;
    if (a.e != b.e) return a.e > b.e;
    return a.logical < b.logical;
  });
  s.roots.clear();
  s.stack.clear();
  s.parent.assign(spans.size(), -1);
  s.child_begin.assign(spans.size() + 1, 0);
  for (int i = 0; i < static_cast<int>(spans.size()); ++i) {
    while (!s.stack.empty() && spans[s.stack.back()].e <= spans[i].s + eps) s.stack.pop_back();
    if (s.stack.empty()) {
      s.roots.push_back(i);
    } else {
      const Span& parent = spans[s.stack.back()];
      if (spans[i].e > parent.e) {
        spans[i].e = parent.e;
        ++*clamped;
      }
      s.parent[i] = s.stack.back();
      ++s.child_begin[s.stack.back() + 1];
    }
    s.stack.push_back(i);
  }
  for (size_t i = 1; i < s.child_begin.size(); ++i) s.child_begin[i] += s.child_begin[i - 1];
  // Children in index order, which is time order.
  s.children.resize(static_cast<size_t>(s.child_begin.back()));
  s.stack.assign(s.child_begin.begin(), s.child_begin.end() - 1);  // next free slot per span
  for (int i = 0; i < static_cast<int>(spans.size()); ++i) {
    if (s.parent[i] >= 0) s.children[static_cast<size_t>(s.stack[s.parent[i]]++)] = i;
  }
}

// Flattens the forest into time-ordered pieces (into s.kept): each op owns the gaps between
// its children. Iterative, so that a pathological nesting depth cannot overflow the stack.
void flatten(ComputeScratch& s) {
  const std::vector<Span>& spans = s.spans;
  std::vector<Piece>& pieces = s.flat;
  pieces.clear();
  std::vector<ComputeScratch::Frame>& stack = s.frames;  // one for all roots
  for (int root : s.roots) {
    stack.assign(1, ComputeScratch::Frame{root, 0, spans[root].s});
    while (!stack.empty()) {
      ComputeScratch::Frame& f = stack.back();
      const Span& sp = spans[f.span];
      const size_t children = static_cast<size_t>(s.child_begin[f.span + 1] - s.child_begin[f.span]);
      if (f.next_child < children) {
        const int child_index = s.children[static_cast<size_t>(s.child_begin[f.span]) + f.next_child];
        const Span& child = spans[child_index];
        pieces.push_back({sp.logical, f.pos, std::max(f.pos, child.s), false, {}});
        f.pos = std::max(f.pos, child.e);
        ++f.next_child;
        stack.push_back({child_index, 0, child.s});
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
  std::vector<int>& positive = s.positive;
  positive.assign(pieces.empty() ? 0 : static_cast<size_t>(top - base + 1), 0);
  for (const Piece& p : pieces) positive[static_cast<size_t>(p.owner - base)] += p.e > p.s ? 1 : 0;
  std::vector<Piece>& kept = s.kept;
  kept.clear();
  std::vector<char>& has_piece = s.has_piece;
  has_piece.assign(positive.size(), 0);
  for (Piece& p : pieces) {
    const auto o = static_cast<size_t>(p.owner - base);
    if (p.e > p.s || (positive[o] == 0 && !has_piece[o])) {
      has_piece[o] = 1;
      kept.push_back(std::move(p));
    }
  }
}

// Cuts pieces where communication ops are launched (s.launches, sorted here), so that each
// launch has a piece ending at it to depend on (DDP launches bucket all-reduces part-way
// through backward).
void cut_at_launches(const std::vector<Piece>& pieces, ComputeScratch& s, double eps, std::vector<Piece>* cut) {
  std::vector<double>& launches = s.launches;
  std::sort(launches.begin(), launches.end());
  std::vector<Piece>& out = *cut;
  out.clear();
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
}

// A compute op that launched collectives and then ended after some of them finished waited for
// them: from its last launch until the last of those finished it was blocked, not working
// (DDP's reducer waits for every bucket at the end of backward). That stretch is removed from
// its duration, and the rest of the op depends on those collectives instead.
void split_waits(const StepModel& m, const std::vector<CommStreamOp>& comm_ops, double eps, ComputeScratch& sc,
                 std::vector<Piece>* pieces, std::vector<char>* consumed) {
  const std::vector<Span>& spans = sc.spans;
  if (spans.empty()) return;
  // compute logical -> (clipped) end, indexed from the lowest (a rank's ops are consecutive)
  int base = std::numeric_limits<int>::max(), top = -1;
  for (const Span& s : spans) {
    base = std::min(base, s.logical);
    top = std::max(top, s.logical);
  }
  std::vector<double>& op_end = sc.op_end;
  op_end.assign(static_cast<size_t>(top - base + 1), 0.0);
  for (const Span& s : spans) op_end[static_cast<size_t>(s.logical - base)] = s.e;
  // (compute logical, comm position) for each launch, then grouped by compute op in logical order
  std::vector<std::pair<int, int>>& launches = sc.launch_of;
  launches.clear();
  for (int c = 0; c < static_cast<int>(comm_ops.size()); ++c) {
    const LogicalOp& op = m.ops[comm_ops[c].logical];
    const int pi = piece_ending_by(*pieces, op.start, eps);
    if (pi < 0) continue;
    const int owner = (*pieces)[pi].owner;
    if (op.start <= op_end[static_cast<size_t>(owner - base)] + eps) launches.emplace_back(owner, c);
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int>& cs = sc.cs;
  for (size_t from = 0; from < launches.size();) {
    const int owner = launches[from].first;
    cs.clear();
    for (; from < launches.size() && launches[from].first == owner; ++from) cs.push_back(launches[from].second);
    const double a_end = op_end[static_cast<size_t>(owner - base)];
    double last_launch = -std::numeric_limits<double>::infinity();
    for (int c : cs) last_launch = std::max(last_launch, m.ops[comm_ops[c].logical].start);
    std::vector<int>& waited = sc.waited;
    waited.clear();
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

void cut_compute_ops(const StepModel& m, const std::vector<int>& compute_ops, const std::vector<CommStreamOp>& comm_ops,
                  double eps, ComputeScratch* scratch, std::vector<Piece>* pieces, std::vector<char>* consumed,
                  uint64_t* clamped) {
  ComputeScratch& s = *scratch;
  nest_compute_ops(m, compute_ops, eps, s, clamped);
  s.launches.clear();
  for (const CommStreamOp& c : comm_ops) s.launches.push_back(m.ops[c.logical].start);
  flatten(s);
  cut_at_launches(s.kept, s, eps, pieces);
  split_waits(m, comm_ops, eps, s, pieces, consumed);
}

}  // namespace sp::online
