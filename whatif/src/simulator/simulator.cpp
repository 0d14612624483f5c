#include "straggler_probe/whatif/simulator.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "graph_units.h"

namespace sp::whatif {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Target size of a block's end times, in doubles (1 MiB): small enough to stay in L2.
constexpr size_t kBlockDoubles = 131072;

void check_size(size_t got, size_t want, bool optional, const char* what) {
  if ((optional && got == 0) || got == want) return;
  throw std::invalid_argument(std::string("simulator input '") + what + "' has " +
                              std::to_string(got) + " values, expected " + std::to_string(want));
}

inline double max2(double a, double b) { return b > a ? b : a; }
inline double min2(double a, double b) { return b < a ? b : a; }

}  // namespace

Simulator::Simulator(const OpGraph& graph, LaneLayout lanes) : lanes_(lanes) {
  if (lanes.num_steps <= 0 || lanes.lanes_per_step <= 0) {
    throw std::invalid_argument("simulator: lane layout needs at least one step and one lane");
  }
  num_nodes_ = graph.num_nodes();
  const UnitSchedule sched = schedule_units(graph);
  unit_offsets_ = sched.offsets;
  unit_members_ = sched.members;
  unit_kind_.reserve(sched.group.size());
  for (size_t u = 0; u < sched.group.size(); ++u) {
    const GroupId g = sched.group[u];
    unit_kind_.push_back(g < 0 ? int8_t{0} : (graph.group(g).sync_across_lanes ? int8_t{2} : int8_t{1}));
    max_group_size_ = std::max(max_group_size_, static_cast<size_t>(sched.offsets[u + 1] - sched.offsets[u]));
  }
  dep_offsets_.reserve(num_nodes_ + 1);
  dep_offsets_.push_back(0);
  ends_step_.resize(num_nodes_);
  for (size_t v = 0; v < num_nodes_; ++v) {
    auto deps = graph.dependencies(static_cast<NodeId>(v));
    dep_nodes_.insert(dep_nodes_.end(), deps.begin(), deps.end());
    dep_offsets_.push_back(static_cast<int32_t>(dep_nodes_.size()));
    ends_step_[v] = graph.node(static_cast<NodeId>(v)).ends_step ? 1 : 0;
  }
  const size_t L = lanes_.num_lanes();
  const auto lps = static_cast<size_t>(lanes_.lanes_per_step);
  // Whole steps per block, at least one.
  block_capacity_ = std::max(lps, std::min(L, kBlockDoubles / std::max<size_t>(num_nodes_, 1)));
  block_capacity_ = std::max(lps, block_capacity_ / lps * lps);
  const auto S = static_cast<size_t>(lanes_.num_steps);
  step_end_.resize(S);
  span_start_.resize(S);
  span_end_.resize(S);
  blk_lanes_.reserve(block_capacity_);
  blk_step_.reserve(block_capacity_);
  blk_end_.resize(num_nodes_ * block_capacity_);
  blk_start_.resize(max_group_size_ * block_capacity_);
  blk_group_.resize(block_capacity_);
  blk_work_.resize(block_capacity_);
  blk_delay_.resize(block_capacity_);
}

const double* Simulator::block_values(NodeId v, std::span<const double> base,
                                      std::span<const double> alt, const SimOverlay* ov,
                                      double* scratch) const {
  const size_t L = lanes_.num_lanes();
  const size_t off = static_cast<size_t>(v) * L;
  const double* b = base.data() + off;
  const size_t B = blk_size_;
  const uint32_t* lanes = blk_lanes_.data();
  const bool overlaid = ov != nullptr && !alt.empty() &&
                        (!ov->cell_mask.empty() || ov->node_mask[static_cast<size_t>(v)] != 0);
  if (!overlaid) {
    if (blk_contiguous_) return b + lanes[0];
    for (size_t j = 0; j < B; ++j) scratch[j] = b[lanes[j]];
    return scratch;
  }
  const double* a = alt.data() + off;
  if (blk_contiguous_) {
    // Offsets without indirection, so that the selects vectorise.
    const uint32_t l0 = lanes[0];
    if (!ov->cell_mask.empty()) {
      const uint8_t* m = ov->cell_mask.data() + off + l0;
      for (size_t j = 0; j < B; ++j) scratch[j] = m[j] ? a[l0 + j] : b[l0 + j];
    } else if (ov->lane_mask.empty()) {
      return a + l0;
    } else {
      const uint8_t* m = ov->lane_mask.data() + l0;
      for (size_t j = 0; j < B; ++j) scratch[j] = m[j] ? a[l0 + j] : b[l0 + j];
    }
    return scratch;
  }
  if (!ov->cell_mask.empty()) {
    const uint8_t* m = ov->cell_mask.data() + off;
    for (size_t j = 0; j < B; ++j) scratch[j] = m[lanes[j]] ? a[lanes[j]] : b[lanes[j]];
  } else if (ov->lane_mask.empty()) {
    for (size_t j = 0; j < B; ++j) scratch[j] = a[lanes[j]];
  } else {
    const uint8_t* m = ov->lane_mask.data();
    for (size_t j = 0; j < B; ++j) scratch[j] = m[lanes[j]] ? a[lanes[j]] : b[lanes[j]];
  }
  return scratch;
}

SimResult Simulator::run(const SimInput& in) {
  const size_t L = lanes_.num_lanes();
  const size_t cells = num_nodes_ * L;
  const auto S = static_cast<size_t>(lanes_.num_steps);
  check_size(in.work.size(), cells, false, "work");
  check_size(in.launch_delay.size(), cells, true, "launch_delay");
  check_size(in.step_start.size(), S, true, "step_start");
  if (in.overlay) {
    const SimOverlay& ov = *in.overlay;
    check_size(ov.work.size(), cells, true, "overlay.work");
    check_size(ov.launch_delay.size(), cells, true, "overlay.launch_delay");
    if (ov.cell_mask.empty()) {
      check_size(ov.node_mask.size(), num_nodes_, false, "overlay.node_mask");
      check_size(ov.lane_mask.size(), L, true, "overlay.lane_mask");
    } else {
      check_size(ov.cell_mask.size(), cells, false, "overlay.cell_mask");
    }
  }
  for (size_t i = 0; i < in.lanes.size(); ++i) {
    if (in.lanes[i] >= L || (i > 0 && in.lanes[i] <= in.lanes[i - 1])) {
      throw std::invalid_argument("simulator input 'lanes' must be ascending lane numbers below " +
                                  std::to_string(L));
    }
  }
  if (in.want_cells) {
    start_.resize(cells);
    end_.resize(cells);
  }
  std::fill(step_end_.begin(), step_end_.end(), -kInf);
  std::fill(span_start_.begin(), span_start_.end(), kInf);
  std::fill(span_end_.begin(), span_end_.end(), -kInf);

  // Blocks of whole steps, up to block_capacity_ replayed lanes each.
  const auto lps = static_cast<uint32_t>(lanes_.lanes_per_step);
  size_t first = 0;
  size_t pos = 0;  // next index into in.lanes
  while (first < S) {
    blk_lanes_.clear();
    blk_step_.clear();
    blk_seg_.assign(1, 0);
    blk_seg_step_.clear();
    size_t st = first;
    while (st < S) {
      const auto lo = static_cast<uint32_t>(st) * lps;
      size_t count;
      if (in.lanes.empty()) {
        count = lps;
      } else {
        size_t e = pos;
        while (e < in.lanes.size() && in.lanes[e] < lo + lps) ++e;
        count = e - pos;
      }
      if (st > first && blk_lanes_.size() + count > block_capacity_) break;
      if (in.lanes.empty()) {
        for (uint32_t l = lo; l < lo + lps; ++l) blk_lanes_.push_back(l);
      } else {
        for (size_t k = 0; k < count; ++k) blk_lanes_.push_back(in.lanes[pos + k]);
        pos += count;
      }
      blk_step_.resize(blk_lanes_.size(), static_cast<uint32_t>(st));
      if (count > 0) {
        blk_seg_.push_back(static_cast<uint32_t>(blk_lanes_.size()));
        blk_seg_step_.push_back(static_cast<uint32_t>(st));
      }
      ++st;
    }
    if (!blk_lanes_.empty()) run_block(in);
    first = st;
  }

  SimResult r;
  if (in.want_cells) {
    r.start = start_;
    r.end = end_;
  }
  r.step_end = step_end_;
  if (in.want_span) {
    r.span_start = span_start_;
    r.span_end = span_end_;
  }
  return r;
}

void Simulator::release_cells(std::vector<double>& start, std::vector<double>& end) {
  start = std::move(start_);
  end = std::move(end_);
  start_ = {};
  end_ = {};
}

void Simulator::start_node(NodeId v, const SimInput& in, double* s) {
  const size_t B = blk_size_;
  const SimOverlay* ov = in.overlay;
  const double* delay = in.launch_delay.empty()
                            ? nullptr
                            : block_values(v, in.launch_delay, ov ? ov->launch_delay : std::span<const double>(),
                                           ov, blk_delay_.data());
  const int32_t d0 = dep_offsets_[static_cast<size_t>(v)];
  const int32_t d1 = dep_offsets_[static_cast<size_t>(v) + 1];
  if (d0 == d1) {
    // A source starts at its step's start, delayed by its own launch delay.
    for (size_t j = 0; j < B; ++j) {
      const double origin = in.step_start.empty() ? 0.0 : in.step_start[blk_step_[j]];
      s[j] = delay ? delay[j] + origin : origin;
    }
    return;
  }
  const double* e0 = blk_end_.data() + static_cast<size_t>(dep_nodes_[static_cast<size_t>(d0)]) * B;
  std::copy(e0, e0 + B, s);
  for (int32_t d = d0 + 1; d < d1; ++d) {
    const double* e = blk_end_.data() + static_cast<size_t>(dep_nodes_[static_cast<size_t>(d)]) * B;
    for (size_t j = 0; j < B; ++j) s[j] = max2(s[j], e[j]);
  }
  if (delay) {
    for (size_t j = 0; j < B; ++j) s[j] = s[j] + delay[j];
  }
}

void Simulator::finish_node(NodeId v, const SimInput& in, const double* s, const double* e) {
  const size_t B = blk_size_;
  const size_t num_segs = blk_seg_step_.size();
  const size_t off = static_cast<size_t>(v) * lanes_.num_lanes();
  const uint32_t* lanes = blk_lanes_.data();
  if (in.want_cells) {
    if (blk_contiguous_) {
      std::copy(s, s + B, start_.data() + off + lanes[0]);
      std::copy(e, e + B, end_.data() + off + lanes[0]);
    } else {
      for (size_t j = 0; j < B; ++j) {
        start_[off + lanes[j]] = s[j];
        end_[off + lanes[j]] = e[j];
      }
    }
  }
  if (ends_step_[static_cast<size_t>(v)]) {
    for (size_t k = 0; k < num_segs; ++k) {
      double mx = step_end_[blk_seg_step_[k]];
      for (size_t j = blk_seg_[k]; j < blk_seg_[k + 1]; ++j) mx = max2(mx, e[j]);
      step_end_[blk_seg_step_[k]] = mx;
    }
  }
  if (in.want_span) {
    for (size_t k = 0; k < num_segs; ++k) {
      double lo = span_start_[blk_seg_step_[k]];
      double hi = span_end_[blk_seg_step_[k]];
      for (size_t j = blk_seg_[k]; j < blk_seg_[k + 1]; ++j) {
        lo = min2(lo, s[j]);
        hi = max2(hi, e[j]);
      }
      span_start_[blk_seg_step_[k]] = lo;
      span_end_[blk_seg_step_[k]] = hi;
    }
  }
}

// A comm group: the transfer starts once every member has launched (across the replicas, the
// lanes of the same step, when synced), and each member ends a transfer later.
void Simulator::run_comm_group(const NodeId* members, size_t num_members, bool synced_over_lanes,
                               const SimInput& in) {
  const size_t B = blk_size_;
  const SimOverlay* ov = in.overlay;
  for (size_t k = 0; k < num_members; ++k) start_node(members[k], in, blk_start_.data() + k * B);
  double* g = blk_group_.data();
  std::copy(blk_start_.data(), blk_start_.data() + B, g);
  for (size_t k = 1; k < num_members; ++k) {
    const double* s = blk_start_.data() + k * B;
    for (size_t j = 0; j < B; ++j) g[j] = max2(g[j], s[j]);
  }
  if (synced_over_lanes) {
    for (size_t k = 0; k < blk_seg_step_.size(); ++k) {
      double mx = g[blk_seg_[k]];
      for (size_t j = blk_seg_[k] + 1; j < blk_seg_[k + 1]; ++j) mx = max2(mx, g[j]);
      std::fill(g + blk_seg_[k], g + blk_seg_[k + 1], mx);
    }
  }
  for (size_t k = 0; k < num_members; ++k) {
    const NodeId v = members[k];
    double* e = blk_end_.data() + static_cast<size_t>(v) * B;
    const double* w = block_values(v, in.work, ov ? ov->work : std::span<const double>(), ov, blk_work_.data());
    for (size_t j = 0; j < B; ++j) e[j] = g[j] + w[j];
    finish_node(v, in, blk_start_.data() + k * B, e);
  }
}

void Simulator::run_block(const SimInput& in) {
  const size_t B = blk_lanes_.size();
  blk_size_ = B;
  blk_contiguous_ = blk_lanes_.back() - blk_lanes_.front() + 1 == B;
  const SimOverlay* ov = in.overlay;
  for (size_t u = 0; u < unit_kind_.size(); ++u) {
    const NodeId* m0 = unit_members_.data() + unit_offsets_[u];
    const NodeId* m1 = unit_members_.data() + unit_offsets_[u + 1];
    if (unit_kind_[u] != 0) {
      run_comm_group(m0, static_cast<size_t>(m1 - m0), unit_kind_[u] == 2, in);
      continue;
    }
    const NodeId v = *m0;
    double* s = blk_start_.data();
    start_node(v, in, s);
    double* e = blk_end_.data() + static_cast<size_t>(v) * B;
    const double* w = block_values(v, in.work, ov ? ov->work : std::span<const double>(), ov, blk_work_.data());
    for (size_t j = 0; j < B; ++j) e[j] = s[j] + w[j];
    finish_node(v, in, s, e);
  }
}

}  // namespace sp::whatif
