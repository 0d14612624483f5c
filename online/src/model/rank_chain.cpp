#include "rank_chain.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "compute_pieces.h"

namespace sp::online {
namespace {

// A comm node added so far, by its recorded end.
struct Ended {
  double end;  // recorded
  int node;
};

}  // namespace

// What a rank's chain is built in, kept from rank to rank; ChainBuilder clears what it uses.
struct RankChainScratch::Buffers {
  ComputeScratch compute;
  std::vector<Piece> pieces;
  std::vector<char> consumed;
  std::vector<int> piece_node, compute_nodes, comm_node, order, by_end;
  std::vector<std::pair<uint64_t, int>> stream_last;
  std::vector<Ended> ended;
};

RankChainScratch::RankChainScratch() : buffers_(std::make_unique<Buffers>()) {}
RankChainScratch::~RankChainScratch() = default;

namespace {

// Adds one rank's nodes to the model, in the order the steps below need them.
class ChainBuilder {
 public:
  ChainBuilder(StepModel* m, RankChainScratch::Buffers* b, int rank, const std::vector<CommStreamOp>& comm_ops,
               double eps)
      : m_(*m), rank_(rank), comm_ops_(comm_ops), eps_(eps), compute_(b->compute), pieces_(b->pieces),
        consumed_(b->consumed), piece_node_(b->piece_node), compute_nodes_(b->compute_nodes), order_(b->order),
        by_end_(b->by_end), comm_node_(b->comm_node), stream_last_(b->stream_last), ended_(b->ended) {
    consumed_.assign(comm_ops.size(), 0);
    compute_nodes_.clear();
    stream_last_.clear();
    ended_.clear();
    comm_node_.clear();
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

  // The compute ops as time-ordered pieces: nesting resolved, cut at communication launches, and
  // the time an op spent blocked on its own collectives taken out.
  void cut_compute_ops(const std::vector<int>& compute_ops) {
    sp::online::cut_compute_ops(m_, compute_ops, comm_ops_, eps_, &compute_, &pieces_, &consumed_, &m_.clamped);
  }

  // Compute nodes: one chain in time order.
  void add_compute_nodes() {
    piece_node_.assign(pieces_.size(), -1);
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const Piece& p = pieces_[i];
      if (p.removed) continue;
      Node n = node(p.owner, NodeRole::kCompute, p.s, p.e);
      n.duration = p.e - p.s;
      n.deps.push_back(compute_nodes_.empty() ? start_node_ : compute_nodes_.back());
      piece_node_[i] = static_cast<int>(m_.nodes.size());
      compute_nodes_.push_back(piece_node_[i]);
      LogicalOp& op = m_.ops[p.owner];
      if (op.first_node < 0) op.first_node = piece_node_[i];
      op.own += n.duration;
      m_.nodes.push_back(std::move(n));
    }
  }

  // Communication nodes: after the piece that launched them and the previous op of their
  // stream; then the pieces that waited for them (DDP's bucket wait) get their edges.
  void add_comm_nodes() {
    std::vector<int>& order = order_;
    order.resize(comm_ops_.size());
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

  // A compute op that starts right after a collective ended (in the gap before it) waited for it:
  // a blocking call, or the optimizer waiting for the gradients.
  void add_waits_for_comm() {
    std::vector<int>& by_end = by_end_;
    by_end.resize(comm_ops_.size());
    for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = static_cast<int>(i);
    std::sort(by_end.begin(), by_end.end(), [&](int a, int b) {
      return m_.ops[comm_ops_[a].logical].end < m_.ops[comm_ops_[b].logical].end;
    });
    size_t next = 0;
    double prev_end = -std::numeric_limits<double>::infinity();
    for (int node : compute_nodes_) {
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
    marker.deps.push_back(compute_nodes_.empty() ? start_node_ : compute_nodes_.back());
    if (!compute_nodes_.empty()) dep_end = m_.nodes[compute_nodes_.back()].end;
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
  ComputeScratch& compute_;
  std::vector<Piece>& pieces_;
  std::vector<char>& consumed_;      // per comm op: a compute piece or the pieces' waits depend on it
  std::vector<int>& piece_node_;     // node per piece, -1 for removed pieces
  std::vector<int>& compute_nodes_;     // the compute chain, in time order
  std::vector<int>& order_;          // add_comm_nodes' comm ops by start
  std::vector<int>& by_end_;         // add_waits_for_comm's comm ops by end
  int comm_node_of(int logical) const { return comm_node_[static_cast<size_t>(logical - comm_base_)]; }

  int comm_base_ = std::numeric_limits<int>::max();  // the rank's lowest comm logical
  std::vector<int>& comm_node_;      // logical - comm_base_ -> node (-1 before it is added)
  // stream -> logical of its latest op so far. A rank has a few streams (its groups, its p2p
  // peers): a list searched in order, not a hash map with a node per stream and rank.
  std::vector<std::pair<uint64_t, int>>& stream_last_;
  std::vector<Ended>& ended_;        // comm nodes so far, by recorded end (ties: in added order)
};

}  // namespace

void build_rank_chain(StepModel* model, RankChainScratch* scratch, int rank, const std::vector<int>& compute_ops,
                      const std::vector<CommStreamOp>& comm_ops, double step_start_s,
                      double step_end_s, double eps) {
  ChainBuilder b(model, &scratch->buffers(), rank, comm_ops, eps);
  b.add_start(step_start_s);
  b.cut_compute_ops(compute_ops);
  b.add_compute_nodes();
  b.add_comm_nodes();
  b.add_waits_for_comm();
  b.add_marker(step_end_s);
}

}  // namespace sp::online
