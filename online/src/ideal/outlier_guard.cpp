#include "outlier_guard.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "robust_stats.h"

namespace sp::online {
namespace {

int stage_of(int r, const std::vector<int>& rank_stage) {
  const auto i = static_cast<size_t>(r);
  return i < rank_stage.size() ? rank_stage[i] : 0;
}

bool has_ops(const GuardArrays& g, int r) {
  return r >= 0 && static_cast<size_t>(r) < g.count.size() && g.count[static_cast<size_t>(r)] > 0;
}

double sse(const std::vector<WorkPoint>& points, const WorkFit& f) {
  double e = 0;
  for (const WorkPoint& p : points) {
    const double d = p.duration - f.work(p.len, p.len_sq);
    e += d * d;
  }
  return e;
}

}  // namespace

WorkFit fit_work(const std::vector<WorkPoint>& points) {
  if (points.size() < 3) return {};
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  for (const WorkPoint& p : points) {
    s11 += p.len * p.len;
    s12 += p.len * p.len_sq;
    s22 += p.len_sq * p.len_sq;
    s1y += p.len * p.duration;
    s2y += p.len_sq * p.duration;
  }
  const double det = s11 * s22 - s12 * s12;
  // Collinear terms (every sequence of one length) leave the pair undetermined: a single term
  // then describes the work as well.
  if (det > 1e-9 * s11 * s22) {
    const WorkFit both{(s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det};
    if (both.a >= 0 && both.b >= 0 && both.usable()) return both;
  }
  const WorkFit linear{s11 > 0 ? std::max(0.0, s1y / s11) : 0.0, 0.0};
  const WorkFit square{0.0, s22 > 0 ? std::max(0.0, s2y / s22) : 0.0};
  if (!linear.usable()) return square;
  if (!square.usable()) return linear;
  return sse(points, linear) <= sse(points, square) ? linear : square;
}

namespace {

// Each rank's window value: its duration per op, or, when every rank of its stage has annotated
// ops, its duration per unit of work times the stage's mean work per op (the same unit, so that
// the floors keep their meaning).
std::vector<double> stage_values(const std::vector<int>& ranks, const GuardArrays& g) {
  std::vector<double> values, work;
  bool per_work = g.fit.usable();
  double total = 0, ops = 0;
  for (int r : ranks) {
    const auto i = static_cast<size_t>(r);
    work.push_back(g.fit.work(g.work_len[i], g.work_len_sq[i]));
    per_work = per_work && work.back() > 0 && g.work_count[i] > 0;
    total += work.back();
    ops += g.work_count[i];
  }
  for (size_t k = 0; k < ranks.size(); ++k) {
    const auto i = static_cast<size_t>(ranks[k]);
    values.push_back(per_work ? g.work_duration[i] / work[k] * (total / ops) : g.sum[i] / g.count[i]);
  }
  return values;
}

}  // namespace

void drop_persistent_outliers(const IdealConfig& cfg, GuardArrays g) {
  std::map<int, std::vector<int>> stage_ranks;
  for (int r : g.ranks) {
    if (has_ops(g, r)) stage_ranks[stage_of(r, g.rank_stage)].push_back(r);
  }
  for (const auto& [stage, ranks] : stage_ranks) {
    if (ranks.size() < 2) continue;
    const std::vector<double> means = stage_values(ranks, g);
    double bound = 0;
    if (static_cast<int>(ranks.size()) >= cfg.outlier_min_workers) {
      std::vector<double> v = means;
      const double med = median_inplace(&v);
      for (double& x : v) x = std::fabs(x - med);
      const double mad = median_inplace(&v);
      bound = med + std::max({cfg.outlier_mad_k * 1.4826 * mad, cfg.outlier_rel_floor * med,
                              cfg.outlier_abs_floor_s});
    } else {
      // Too few workers for a spread: the faster one stands for the stage's work, since
      // stragglers are slow, not fast; the same floors keep timer noise and small differences in.
      const double fastest = *std::min_element(means.begin(), means.end());
      bound = fastest + std::max(cfg.outlier_rel_floor * fastest, cfg.outlier_abs_floor_s);
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (means[i] > bound) {
        g.dropped[static_cast<size_t>(ranks[i])] = 1;
        g.excluded.insert(ranks[i]);
      }
    }
  }
}

}  // namespace sp::online
