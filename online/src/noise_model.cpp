#include "noise_model.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace sp::online {
namespace {

double median_inplace(std::vector<double>* v) {
  if (v->empty()) return 0;
  const size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(mid), v->end());
  const double hi = (*v)[mid];
  if (v->size() % 2) return hi;
  const double lo = *std::max_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

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

// Peers: the values of one (key, stage) in this step. Each one's residual is its difference
// from the median of the OTHER peers, scaled by 1 / sqrt(1 + var(that median)) so that it has
// the jitter's sd whatever the number of peers. Why not the peers' own median: with few peers
// (4 ranks) it sits among them and the residuals come out much too small (a null too narrow,
// every rank looking significant); leaving the op out of its own reference removes that, and a
// straggler among the peers moves the others' reference by one order statistic only. At most
// kMaxPerKey residuals (every k-th) go to `out`.
void add_residuals(const std::vector<double>& peers, std::vector<float>* out) {
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
  }
}

using PeerMap = std::unordered_map<int64_t, std::vector<double>>;

int64_t peer_id(int key, int stage, int stages) {
  return static_cast<int64_t>(key) * std::max(1, stages) + stage;
}

}  // namespace

double mad_sigma(std::vector<double>* v) {
  if (v->empty()) return 0;
  const double med = median_inplace(v);
  for (double& x : *v) x = std::fabs(x - med);
  return 1.4826 * median_inplace(v);
}

void NoiseWindow::push(const StepModel& m) {
  PeerMap work, delay;
  auto stage_of = [&m](int rank) { return m.rank_stage[static_cast<size_t>(rank)]; };
  for (const LogicalOp& op : m.ops) {
    // Pauses (gc, data-wait) are a cause, not jitter: present on one rank, absent on others.
    if (op.rule != IdealRule::kSlotMean && op.own > 0) {
      work[peer_id(op.key, stage_of(op.rank), m.pp_size)].push_back(std::log(op.own));
    }
    if (op.first_node >= 0) {
      delay[peer_id(op.delay_key, stage_of(op.rank), m.pp_size)].push_back(
          m.nodes[static_cast<size_t>(op.first_node)].launch_delay);
    }
  }
  for (int r = 0; r < m.world; ++r) {
    delay[peer_id(m.marker_delay_key, stage_of(r), m.pp_size)].push_back(
        m.nodes[static_cast<size_t>(m.markers[static_cast<size_t>(r)])].launch_delay);
  }
  StepResiduals s;
  const int stages = std::max(1, m.pp_size);
  for (const auto& [id, peers] : work) add_residuals(peers, &s.work[m.ideal_keys[static_cast<size_t>(id / stages)]]);
  for (const auto& [id, peers] : delay) add_residuals(peers, &s.delay[m.delay_keys[static_cast<size_t>(id / stages)]]);
  steps_.push_back(std::move(s));
  while (static_cast<int>(steps_.size()) > std::max(1, window_steps_)) steps_.pop_front();
}

NoiseSpread NoiseWindow::spread(const StepModel& m) const {
  NoiseSpread out;
  std::vector<double> pool;
  auto sigma = [&](const std::string& key, bool is_delay) {
    pool.clear();
    for (const StepResiduals& s : steps_) {
      const auto& map = is_delay ? s.delay : s.work;
      auto it = map.find(key);
      if (it == map.end()) continue;
      for (float x : it->second) pool.push_back(x);
    }
    return mad_sigma(&pool);
  };
  out.work_sigma.assign(m.ideal_keys.size(), 0.0);
  for (size_t k = 0; k < m.ideal_keys.size(); ++k) out.work_sigma[k] = sigma(m.ideal_keys[k], false);
  out.delay_sigma.assign(m.delay_keys.size(), 0.0);
  for (size_t k = 0; k < m.delay_keys.size(); ++k) out.delay_sigma[k] = sigma(m.delay_keys[k], true);
  return out;
}

}  // namespace sp::online
