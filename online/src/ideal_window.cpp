#include "ideal_window.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sp::online {
namespace {

KeyStats& stats_for(std::map<std::string, KeyStats>* map, const std::string& key, IdealRule rule,
                    int world) {
  KeyStats& ks = (*map)[key];
  if (ks.sum.empty()) {
    ks.rule = rule;
    ks.sum.assign(world, 0.0);
    ks.count.assign(world, 0.0);
  }
  return ks;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

// The mean over the window and the workers, the paper's ideal for compute, with one guard.
//
// Why the guard: the mean re-balances work, which is right when the work itself is uneven
// (pipeline stages, sequence lengths) but wrong for a worker that is simply slow. In a small
// job the slow worker drags the mean towards itself: with 4 ranks of which one is 30% slower
// the mean is 1.075x the healthy speed, so S would come out ~7% low. Workers doing the same
// work are the dp ranks of one stage; a worker whose window-mean sits far above its stage's
// median (beyond a MAD bound, with relative and absolute floors so that timer noise never
// counts) is a persistent outlier and is left out of the mean. Averaging over the window first
// makes the test about persistent slowness: one long micro-batch (a long sequence) is not it.
double robust_mean(const std::vector<double>& sum, const std::vector<double>& count,
                   const std::vector<int>& rank_stage, const IdealConfig& cfg,
                   std::set<int>* excluded, std::vector<char>* dropped) {
  std::vector<char>& drop = *dropped;
  drop.assign(sum.size(), 0);
  if (cfg.exclude_outliers) {
    std::map<int, std::vector<int>> stage_ranks;
    for (size_t r = 0; r < sum.size(); ++r) {
      if (count[r] > 0) stage_ranks[r < rank_stage.size() ? rank_stage[r] : 0].push_back(static_cast<int>(r));
    }
    for (const auto& [stage, ranks] : stage_ranks) {
      if (ranks.size() < 2) continue;
      std::vector<double> means;
      for (int r : ranks) means.push_back(sum[r] / count[r]);
      double bound = 0;
      if (static_cast<int>(ranks.size()) >= cfg.outlier_min_workers) {
        const double med = median_of(means);
        std::vector<double> dev;
        for (double x : means) dev.push_back(std::fabs(x - med));
        const double mad = median_of(dev);
        bound = med + std::max({cfg.outlier_mad_k * 1.4826 * mad, cfg.outlier_rel_floor * med,
                                cfg.outlier_abs_floor_s});
      } else {
        // Too few workers for a spread (2 dp ranks per stage, common in pipelines): the faster
        // one stands for the stage's work, since stragglers are slow, not fast; the same
        // floors keep timer noise and small differences in.
        const double fastest = *std::min_element(means.begin(), means.end());
        bound = fastest + std::max(cfg.outlier_rel_floor * fastest, cfg.outlier_abs_floor_s);
      }
      for (size_t i = 0; i < ranks.size(); ++i) {
        if (means[i] > bound) {
          drop[ranks[i]] = 1;
          excluded->insert(ranks[i]);
        }
      }
    }
  }
  double total = 0, n = 0;
  for (size_t r = 0; r < sum.size(); ++r) {
    if (drop[r]) continue;
    total += sum[r];
    n += count[r];
  }
  return n > 0 ? total / n : 0.0;
}

}  // namespace

StepSamples collect_samples(const StepModel& m) {
  StepSamples s;
  s.step = m.step;
  s.rank_stage = m.rank_stage;
  for (const LogicalOp& op : m.ops) {
    KeyStats& d = stats_for(&s.durations, m.ideal_keys[op.key], op.rule, m.world);
    d.sum[op.rank] += op.own;
    d.count[op.rank] += 1;
    if (op.rule == IdealRule::kMedian) d.samples.push_back(op.own);
    if (op.first_node >= 0) {
      KeyStats& l = stats_for(&s.delays, m.delay_keys[op.delay_key], IdealRule::kMean, m.world);
      l.sum[op.rank] += m.nodes[op.first_node].launch_delay;
      l.count[op.rank] += 1;
    }
  }
  for (int r = 0; r < m.world; ++r) {
    KeyStats& l = stats_for(&s.delays, m.delay_keys[m.marker_delay_key], IdealRule::kMean, m.world);
    l.sum[r] += m.nodes[m.markers[r]].launch_delay;
    l.count[r] += 1;
  }
  return s;
}

void IdealWindow::push(StepSamples samples) {
  steps_.push_back(std::move(samples));
  while (static_cast<int>(steps_.size()) > std::max(1, config_.window_steps)) steps_.pop_front();
}

// How much work per op this key took in the current step compared with the window, over the
// workers the window keeps (persistent outliers stay out). For compute and for launch delays,
// which are per-worker quantities; not for transfers, which a whole group shares (a transfer
// slower than usual for every member is exactly what the comm cause is about).
//
// Why: straggling is lagging behind one's peers in the same step. When every worker slows down
// together (a busy host, a lower clock, longer batches for everyone), the window mean would call
// the step slow and its slowest worker a straggler. Scaled this way, the compute ideal is this
// step's own work spread evenly over the workers (the paper's re-balancing, per step), while the
// window still decides who is persistently slow. Off with IdealConfig::follow_step_level = false
// (the paper's fixed ideal over the window).
double IdealWindow::step_level(const std::string& key, bool is_delay,
                               const std::vector<double>& window_sum,
                               const std::vector<double>& window_count,
                               const std::vector<char>& dropped) const {
  if (!config_.follow_step_level || steps_.size() < 2) return 1.0;
  const auto& map = is_delay ? steps_.back().delays : steps_.back().durations;
  auto it = map.find(key);
  if (it == map.end()) return 1.0;
  const KeyStats& now = it->second;
  double now_sum = 0, now_n = 0, win_sum = 0, win_n = 0;
  for (size_t r = 0; r < now.sum.size() && r < window_sum.size(); ++r) {
    if (r < dropped.size() && dropped[r]) continue;
    now_sum += now.sum[r];
    now_n += now.count[r];
    win_sum += window_sum[r];
    win_n += window_count[r];
  }
  if (now_n <= 0 || win_n <= 0 || now_sum <= 0 || win_sum <= 0) return 1.0;
  return (now_sum / now_n) / (win_sum / win_n);
}

Ideals IdealWindow::ideals(const StepModel& m) const {
  Ideals out;
  std::set<int> excluded;
  auto aggregate = [&](const std::string& key, bool is_delay) {
    IdealRule rule = IdealRule::kMean;  // the rule of a key is recorded with its samples
    std::vector<double> sum(m.world, 0.0), count(m.world, 0.0), samples;
    double slot_total = 0, slots = 0;
    for (const StepSamples& st : steps_) {
      const auto& map = is_delay ? st.delays : st.durations;
      auto it = map.find(key);
      // A step without this key still counts as slots for pauses: nobody paused then.
      slots += static_cast<double>(st.rank_stage.size());
      if (it == map.end()) continue;
      const KeyStats& ks = it->second;
      rule = ks.rule;
      for (size_t r = 0; r < ks.sum.size() && r < sum.size(); ++r) {
        sum[r] += ks.sum[r];
        count[r] += ks.count[r];
        slot_total += ks.sum[r];
      }
      samples.insert(samples.end(), ks.samples.begin(), ks.samples.end());
    }
    switch (rule) {
      case IdealRule::kMedian: return median_of(std::move(samples));
      case IdealRule::kSlotMean: return slots > 0 ? slot_total / slots : 0.0;
      case IdealRule::kMean: break;
    }
    std::vector<char> dropped;
    const double mean = robust_mean(sum, count, m.rank_stage, config_, &excluded, &dropped);
    return mean * step_level(key, is_delay, sum, count, dropped);
  };
  out.duration.assign(m.ideal_keys.size(), 0.0);
  for (size_t k = 0; k < m.ideal_keys.size(); ++k) out.duration[k] = aggregate(m.ideal_keys[k], false);
  out.delay.assign(m.delay_keys.size(), 0.0);
  for (size_t k = 0; k < m.delay_keys.size(); ++k) out.delay[k] = aggregate(m.delay_keys[k], true);
  out.excluded_ranks.assign(excluded.begin(), excluded.end());
  return out;
}

}  // namespace sp::online
