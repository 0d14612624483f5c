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
  // Own compute time per (rank, micro-batch), and per rank for step-wide annotations: the
  // forward and backward ops sorted by (rank, micro-batch), stably, so that each slot adds its
  // ops in the model's order (as a map filled op by op would; a map cost a node per slot, ~32k
  // a step at 4096 ranks).
  struct Slot {
    int rank, microbatch;
    double forward = 0, backward = 0;
  };
  std::vector<size_t> order;
  for (size_t o = 0; o < m.ops.size(); ++o) {
    if (m.ops[o].kind == SP_OP_FORWARD || m.ops[o].kind == SP_OP_BACKWARD) order.push_back(o);
  }
  std::stable_sort(order.begin(), order.end(), [&m](size_t a, size_t b) {
    return std::pair(m.ops[a].rank, m.ops[a].microbatch) < std::pair(m.ops[b].rank, m.ops[b].microbatch);
  });
  std::vector<Slot> fb;  // by (rank, micro-batch)
  for (size_t o : order) {
    const LogicalOp& op = m.ops[o];
    if (fb.empty() || fb.back().rank != op.rank || fb.back().microbatch != op.microbatch) {
      fb.push_back({op.rank, op.microbatch});
    }
    (op.kind == SP_OP_FORWARD ? fb.back().forward : fb.back().backward) += op.own;
  }
  for (const Slot& slot : fb) {
    if (slot.forward > 0 && slot.backward > 0) {
      step.fb.push_back({m.rank_stage[static_cast<size_t>(slot.rank)], slot.forward, slot.backward});
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
    auto it = std::lower_bound(fb.begin(), fb.end(), c.rank, [](const Slot& x, int rank) { return x.rank < rank; });
    for (; it != fb.end() && it->rank == c.rank; ++it) {
      // A step-wide annotation (micro-batch -1) covers all of the rank's compute.
      if (c.microbatch < 0 || it->microbatch == c.microbatch) compute += it->forward + it->backward;
    }
    if (compute > 0) {
      step.seq.push_back({m.rank_stage[static_cast<size_t>(c.rank)], c.sum_len_sq, compute, c.sum_len});
    }
  }
  // By stage (stable: window order within a stage), as evidence() reads them.
  const auto by_stage = [](const Sample& a, const Sample& b) { return a.stage < b.stage; };
  std::stable_sort(step.seq.begin(), step.seq.end(), by_stage);
  std::stable_sort(step.fb.begin(), step.fb.end(), by_stage);
  steps_.push_back(std::move(step));
  while (static_cast<int>(steps_.size()) > std::max(1, window_)) steps_.pop_front();
}

namespace {

// pearson() over the samples visit() yields, in the same order and with the same arithmetic as
// pearson() over their values copied into two vectors (so the same result to the bit).
template <typename Visit, typename X, typename Y>
double pearson_over(const Visit& visit, size_t n, X x, Y y) {
  if (n < 3) return 0;
  double mx = 0, my = 0;
  visit([&](const auto& s) {
    mx += x(s);
    my += y(s);
  });
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  visit([&](const auto& s) {
    sxy += (x(s) - mx) * (y(s) - my);
    sxx += (x(s) - mx) * (x(s) - mx);
    syy += (y(s) - my) * (y(s) - my);
  });
  if (sxx <= 0 || syy <= 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

SeqEvidence SeqWindow::evidence() const {
  SeqEvidence e;
  // Stages do different work, so samples are only compared within a stage; the stages'
  // correlations are then averaged, weighted by their number of samples. Each step keeps its
  // samples ordered by stage (push), so a stage's samples are read in place, step by step, in
  // window order: no copy of the window per step.
  auto pooled = [this](bool seq, double* r, double* r_linear, double* cv, int* samples) {
    std::vector<int> stages;
    for (const Step& st : steps_) {
      for (const Sample& s : seq ? st.seq : st.fb) {
        if (stages.empty() || stages.back() != s.stage) stages.push_back(s.stage);
      }
    }
    std::sort(stages.begin(), stages.end());
    stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
    const auto by_stage = [](const Sample& a, const Sample& b) { return a.stage < b.stage; };
    double wr = 0, wl = 0, wcv = 0, w = 0;
    for (const int stage : stages) {
      const Sample key{stage, 0, 0};
      const auto visit = [&](const auto& f) {
        for (const Step& st : steps_) {
          const std::vector<Sample>& v = seq ? st.seq : st.fb;
          const auto [from, to] = std::equal_range(v.begin(), v.end(), key, by_stage);
          for (auto it = from; it != to; ++it) f(*it);
        }
      };
      size_t count = 0;
      visit([&count](const Sample&) { ++count; });
      if (count < 4) continue;
      const double n = static_cast<double>(count);
      const auto x = [](const Sample& s) { return s.x; };
      const auto y = [](const Sample& s) { return s.y; };
      wr += n * pearson_over(visit, count, x, y);
      if (r_linear) wl += n * pearson_over(visit, count, [](const Sample& s) { return s.x_linear; }, y);
      if (cv) {
        double mean = 0, var = 0;
        visit([&mean](const Sample& s) { mean += s.x; });
        mean /= n;
        visit([&var, mean](const Sample& s) { var += (s.x - mean) * (s.x - mean); });
        var /= n;
        wcv += n * (mean > 0 ? std::sqrt(var) / mean : 0);
      }
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
