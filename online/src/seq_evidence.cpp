#include "seq_evidence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace sp::online {

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

void SeqWindow::push(const StepModel& m) {
  Step step;
  // Own compute time per (rank, micro-batch), and per rank for step-wide annotations.
  std::map<std::pair<int, int>, std::pair<double, double>> fb;  // -> (forward, backward)
  for (const LogicalOp& op : m.ops) {
    if (op.kind != SP_OP_FORWARD && op.kind != SP_OP_BACKWARD) continue;
    auto& slot = fb[{op.rank, op.microbatch}];
    (op.kind == SP_OP_FORWARD ? slot.first : slot.second) += op.own;
  }
  for (const auto& [key, fwd_bwd] : fb) {
    if (fwd_bwd.first > 0 && fwd_bwd.second > 0) {
      step.fb.push_back({m.rank_stage[static_cast<size_t>(key.first)], fwd_bwd.first, fwd_bwd.second});
    }
  }
  std::map<std::pair<int, int>, MicrobatchCost> costs;  // merged per (rank, micro-batch)
  for (const MicrobatchCost& c : m.costs) {
    MicrobatchCost& slot = costs[{c.rank, c.microbatch}];
    slot.rank = c.rank;
    slot.microbatch = c.microbatch;
    slot.sum_len += c.sum_len;
    slot.sum_len_sq += c.sum_len_sq;
  }
  for (const auto& [key, c] : costs) {
    double compute = 0;
    // The rank's entries only (fb is ordered by rank, then micro-batch): the same sum in the
    // same order as a scan of all of fb, without its cost of ranks x micro-batches per cost.
    for (auto it = fb.lower_bound({c.rank, std::numeric_limits<int>::min()});
         it != fb.end() && it->first.first == c.rank; ++it) {
      const auto& [fk, fwd_bwd] = *it;
      // A step-wide annotation (micro-batch -1) covers all of the rank's compute.
      if (c.microbatch < 0 || fk.second == c.microbatch) compute += fwd_bwd.first + fwd_bwd.second;
    }
    if (compute > 0) {
      step.seq.push_back({m.rank_stage[static_cast<size_t>(c.rank)], c.sum_len_sq, compute, c.sum_len});
    }
  }
  steps_.push_back(std::move(step));
  while (static_cast<int>(steps_.size()) > std::max(1, window_)) steps_.pop_front();
}

SeqEvidence SeqWindow::evidence() const {
  SeqEvidence e;
  // Stages do different work, so samples are only compared within a stage; the stages'
  // correlations are then averaged, weighted by their number of samples.
  auto pooled = [this](bool seq, double* r, double* r_linear, double* cv, int* samples) {
    // One pass over the window into each stage's columns (stages in ascending order, samples
    // in window order, as before), no per-sample pointers.
    struct Columns {
      std::vector<double> x, y, xl;
    };
    std::map<int, Columns> by_stage;
    for (const Step& st : steps_) {
      for (const Sample& s : seq ? st.seq : st.fb) {
        Columns& c = by_stage[s.stage];
        c.x.push_back(s.x);
        c.y.push_back(s.y);
        c.xl.push_back(s.x_linear);
      }
    }
    double wr = 0, wl = 0, wcv = 0, w = 0;
    for (const auto& [stage, columns] : by_stage) {
      const std::vector<double>& x = columns.x;
      const std::vector<double>& y = columns.y;
      const std::vector<double>& xl = columns.xl;
      if (x.size() < 4) continue;
      double mean = 0, var = 0;
      for (double v : x) mean += v;
      mean /= static_cast<double>(x.size());
      for (double v : x) var += (v - mean) * (v - mean);
      var /= static_cast<double>(x.size());
      const double n = static_cast<double>(x.size());
      wr += n * pearson(x, y);
      wl += n * pearson(xl, y);
      wcv += n * (mean > 0 ? std::sqrt(var) / mean : 0);
      w += n;
    }
    if (w > 0) {
      *r = wr / w;
      if (r_linear) *r_linear = wl / w;
      if (cv) *cv = wcv / w;
    }
    *samples = static_cast<int>(w);
  };
  pooled(true, &e.seq_corr, &e.seq_corr_linear, &e.cost_cv, &e.seq_samples);
  pooled(false, &e.fb_corr, nullptr, nullptr, &e.fb_samples);
  return e;
}

}  // namespace sp::online
