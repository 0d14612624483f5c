#include "noise_model.h"

#include <algorithm>
#include <cmath>

#include "ideal/robust_stats.h"

namespace sp::online {
namespace {

// Variance of the median of m normal draws, in units of their variance: exact for m <= 3,
// the large-m law pi / (2m) beyond.
double median_variance(size_t m) {
  switch (m) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 0.5;
    case 3: return 0.4487;
    default: return 1.5707963267948966 / static_cast<double>(m);
  }
}

// Peers: the values of one (key, stage) in this step (each already against its rank's own
// baseline, NoiseWindow::residuals). Each one's residual is its difference
// from the median of the OTHER peers, scaled by 1 / sqrt(1 + var(that median)) so that it has
// the jitter's sd whatever the number of peers. Why not the peers' own median: with few peers
// (4 ranks) it sits among them and the residuals come out much too small (a null too narrow,
// every rank looking significant); leaving the op out of its own reference removes that, and a
// straggler among the peers moves the others' reference by one order statistic only. At most
// kMaxPerKey residuals (every k-th) go to `out`.
void add_residuals(const std::vector<double>& peers, const std::vector<int>& ranks, std::vector<float>* out,
                   std::vector<int>* out_ranks) {
  const size_t n = peers.size();
  if (n < 2) return;  // one op alone has no peer to differ from
  std::vector<double> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = n - 1;
  const double scale = 1.0 / std::sqrt(1.0 + median_variance(m));
  auto others_median = [&](double x) {
    // The position of one copy of x in sorted; the others are sorted without it.
    const size_t k = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
    auto at = [&](size_t j) { return sorted[j < k ? j : j + 1]; };
    return m % 2 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
  };
  const size_t stride = std::max<size_t>(1, n / NoiseWindow::kMaxPerKey);
  for (size_t i = 0; i < n; i += stride) {
    out->push_back(static_cast<float>(scale * (peers[i] - others_median(peers[i]))));
    out_ranks->push_back(ranks[i]);
  }
}

}  // namespace

void NoiseWindow::push(const StepModel& m) {
  // A fixed subset of the ranks (every stride-th), so that the baselines follow the same ranks
  // from step to step and the memory is bounded whatever the job's size.
  const int stride = std::max(1, m.world / static_cast<int>(kMaxPerKey));
  std::vector<NoiseSample> work, delay;
  auto stage_of = [&m](int rank) { return m.rank_stage[static_cast<size_t>(rank)]; };
  for (const LogicalOp& op : m.ops) {
    if (op.rank % stride) continue;
    // Pauses (gc, data-wait) are a cause, not jitter: present on one rank, absent on others.
    if (op.rule != IdealRule::kSlotMean && op.own > 0) {
      work.push_back({m.ideal_keys[static_cast<size_t>(op.key)], op.rank, stage_of(op.rank), std::log(op.own),
                      op.rule == IdealRule::kMedian});
    }
    if (op.first_node >= 0) {
      delay.push_back({m.delay_keys[static_cast<size_t>(op.delay_key)], op.rank, stage_of(op.rank),
                       m.nodes[static_cast<size_t>(op.first_node)].launch_delay});
    }
  }
  for (int r = 0; r < m.world; r += stride) {
    delay.push_back({m.delay_keys[static_cast<size_t>(m.marker_delay_key)], r, stage_of(r),
                     m.nodes[static_cast<size_t>(m.markers[static_cast<size_t>(r)])].launch_delay});
  }
  StepResiduals s;
  residuals(work, work_totals_, &s.work, &s.work_sums);
  residuals(delay, delay_totals_, &s.delay, &s.delay_sums);
  add_sums(s.work_sums, &work_totals_, 1.0);
  add_sums(s.delay_sums, &delay_totals_, 1.0);
  steps_.push_back(std::move(s));
  while (static_cast<int>(steps_.size()) > std::max(1, window_steps_)) {
    add_sums(steps_.front().work_sums, &work_totals_, -1.0);
    add_sums(steps_.front().delay_sums, &delay_totals_, -1.0);
    steps_.pop_front();
  }
}

void NoiseWindow::pop_back() {
  if (steps_.empty()) return;
  add_sums(steps_.back().work_sums, &work_totals_, -1.0);
  add_sums(steps_.back().delay_sums, &delay_totals_, -1.0);
  steps_.pop_back();
}

void NoiseWindow::add_sums(const Sums& sums, Totals* totals, double sign) {
  for (const auto& [key, by_rank] : sums) {
    auto& t = (*totals)[key];
    for (const auto& [rank, sc] : by_rank) {
      auto& x = t[rank];
      x.first += sign * sc.first;
      x.second += sign * sc.second;
    }
  }
}

// Jitter is what varies from step to step: each op against its own rank's mean over the
// window's earlier steps (a persistently slow rank is its own baseline, so it does not widen
// the jitter at all), then against the median of its peers' (same key, same stage) this step,
// which removes what the whole step shares (the ideal follows that). Both references are
// estimates; the residuals are scaled so that their sd is the jitter's.
void NoiseWindow::residuals(const std::vector<NoiseSample>& samples, const Totals& totals,
                            std::map<std::string, Residuals>* out, Sums* sums) {
  struct Values {
    std::vector<double> value;
    std::vector<int> rank;
  };
  std::map<std::pair<std::string, int>, Values> peers;  // by (key, stage)
  std::map<std::string, Values> alone;                  // transfers, by key
  for (const NoiseSample& x : samples) {
    auto& sc = (*sums)[x.key][x.rank];
    sc.first += x.value;
    sc.second += 1;
    // A rank without earlier steps (the job's first step) has no baseline: its value is taken
    // against its peers alone, which is all the first step can tell.
    double e = x.value;
    bool has_baseline = false;
    auto kt = totals.find(x.key);
    if (kt != totals.end()) {
      auto rt = kt->second.find(x.rank);
      if (rt != kt->second.end() && rt->second.second >= 1) {
        const double n_prev = rt->second.second;
        e = (x.value - rt->second.first / n_prev) / std::sqrt(1.0 + 1.0 / n_prev);
        has_baseline = true;
      }
    }
    // A transfer has no peer reference either: without a baseline its value is no residual at
    // all (raw log durations of different transfers under one key made the first step's null
    // of a pipeline 39% slow, and the pools drawn from it kept that for a window).
    if (x.shared && !has_baseline) continue;
    // A transfer's time is its group's (every member ends together): what varies is the
    // group's from step to step, which the peers share, so it has no peer reference; the
    // ideal does not follow the step's level for transfers either.
    Values& to = x.shared ? alone[x.key] : peers[{x.key, x.stage}];
    to.value.push_back(e);
    to.rank.push_back(x.rank);
  }
  for (const auto& [id, e] : peers) {
    Residuals& o = (*out)[id.first];
    add_residuals(e.value, e.rank, &o.value, &o.rank);
  }
  for (const auto& [key, e] : alone) {
    Residuals& o = (*out)[key];
    const size_t stride = std::max<size_t>(1, e.value.size() / kMaxPerKey);
    for (size_t i = 0; i < e.value.size(); i += stride) {
      o.value.push_back(static_cast<float>(e.value[i]));
      o.rank.push_back(e.rank[i]);
    }
  }
}

NoiseSpread NoiseWindow::spread(const StepModel& m, const std::vector<char>* excluded) const {
  NoiseSpread out;
  std::vector<double> pool;
  auto left_out = [excluded](int rank) {
    return excluded && rank >= 0 && static_cast<size_t>(rank) < excluded->size() && (*excluded)[static_cast<size_t>(rank)];
  };
  auto gather = [&](const std::string& key, bool is_delay, bool exclude) {
    pool.clear();
    for (const StepResiduals& s : steps_) {
      const auto& map = is_delay ? s.delay : s.work;
      auto it = map.find(key);
      if (it == map.end()) continue;
      const Residuals& r = it->second;
      for (size_t i = 0; i < r.value.size(); ++i) {
        if (!exclude || !left_out(r.rank[i])) pool.push_back(r.value[i]);
      }
    }
  };
  auto sigma = [&](const std::string& key, bool is_delay) {
    gather(key, is_delay, true);
    if (pool.empty()) gather(key, is_delay, false);
    return mad_sigma(&pool);
  };
  out.work_sigma.assign(m.ideal_keys.size(), 0.0);
  for (size_t k = 0; k < m.ideal_keys.size(); ++k) out.work_sigma[k] = sigma(m.ideal_keys[k], false);
  out.delay_sigma.assign(m.delay_keys.size(), 0.0);
  for (size_t k = 0; k < m.delay_keys.size(); ++k) out.delay_sigma[k] = sigma(m.delay_keys[k], true);
  return out;
}

}  // namespace sp::online
