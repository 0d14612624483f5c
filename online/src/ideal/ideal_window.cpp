#include "ideal_window.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>

#include "outlier_guard.h"
#include "robust_stats.h"

namespace sp::online {

// One key's per-rank sums over the window, dense over the ranks for the arithmetic and sparse
// for the bookkeeping: only the entries of `ranks` are set, and they are zeroed again after the
// key, so that each key costs its own entries, not the world.
struct IdealWindow::Scratch {
  std::vector<double> sum, count;  // per rank, over the window
  std::vector<char> seen, dropped;  // per rank
  std::vector<int> ranks;           // the ranks with an op under the key, ascending
  std::vector<double> samples;
  std::vector<const KeyStats*> found;              // the key's stats in each step that has it
  std::vector<std::span<const double>> runs;       // their sorted transfer samples
  std::vector<double> aligned_sum, aligned_count;  // window_sums' aligned path
  std::vector<WorkPoint> points;                   // the guard's work fit
  std::vector<double> work_duration, work_len, work_len_sq, work_count;  // per rank: the guard's annotated ops
  bool last_has_key = false;                             // the window's last step has the key
  double transfer_keys = 0;                              // this step's, for the reference's test
  std::vector<std::pair<std::string, TransferReference::Window>> transfer_windows;
  std::set<int> excluded;

  explicit Scratch(size_t world)
      : sum(world, 0.0), count(world, 0.0), seen(world, 0), dropped(world, 0), work_duration(world, 0.0),
        work_len(world, 0.0), work_len_sq(world, 0.0), work_count(world, 0.0) {}
  void reset() {
    for (int r : ranks) {
      const auto i = static_cast<size_t>(r);
      sum[i] = count[i] = work_duration[i] = work_len[i] = work_len_sq[i] = work_count[i] = 0.0;
      seen[i] = dropped[i] = 0;
    }
    ranks.clear();
    samples.clear();
  }
};

namespace {

KeyStats& stats_for(std::map<std::string, KeyStats>* map, const std::string& key, IdealRule rule) {
  auto [it, added] = map->try_emplace(key);
  if (added) it->second.rule = rule;
  return it->second;
}

void add_entry(KeyStats* ks, int rank, double value) {
  if (ks->ranks.empty() || ks->ranks.back() != rank) {
    ks->ranks.push_back(rank);
    ks->sum.push_back(0.0);
    ks->count.push_back(0);
  }
  ks->sum.back() += value;
  ks->count.back() += 1;
}

// An op's micro-batch's sequence lengths, into its entry (the one add_entry just added to).
// A key is work-known only while every op of it has them.
void add_work(KeyStats* ks, const MicrobatchCost* cost) {
  if (!ks->work_known) return;
  if (!cost) {
    ks->work_known = false;
    ks->len.clear();
    ks->len_sq.clear();
    return;
  }
  ks->len.resize(ks->ranks.size(), 0.0);
  ks->len_sq.resize(ks->ranks.size(), 0.0);
  ks->len.back() += cost->sum_len;
  ks->len_sq.back() += cost->sum_len_sq;
}

// The micro-batches' sequence lengths by (rank, micro-batch), merged as seq_evidence merges
// them; empty when the step has none. Sorted, not indexed: the micro-batch numbers come from
// the ranks' summaries, and a table as long as the largest of them could be any size.
struct CostTable {
  std::vector<MicrobatchCost> sorted;
  explicit CostTable(const StepModel& m) {
    for (const MicrobatchCost& c : m.costs) {
      if (c.rank >= 0 && c.rank < m.world && c.microbatch >= 0) sorted.push_back(c);
    }
    std::sort(sorted.begin(), sorted.end(), before);
    size_t out = 0;  // merge duplicates of one (rank, micro-batch)
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (out > 0 && !before(sorted[out - 1], sorted[i])) {
        sorted[out - 1].sum_len += sorted[i].sum_len;
        sorted[out - 1].sum_len_sq += sorted[i].sum_len_sq;
      } else {
        sorted[out++] = sorted[i];
      }
    }
    sorted.resize(out);
  }
  static bool before(const MicrobatchCost& a, const MicrobatchCost& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.microbatch < b.microbatch;
  }
  const MicrobatchCost* find(int rank, int mb) const {
    if (sorted.empty() || mb < 0) return nullptr;
    const MicrobatchCost key{rank, mb, 0, 0};
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), key, before);
    return it != sorted.end() && it->rank == rank && it->microbatch == mb ? &*it : nullptr;
  }
};

double median_of(std::vector<double> v) { return median_inplace(&v); }

// The mean over the window and the workers, the paper's ideal for compute, without the ranks
// the guard dropped.
//
// Why the guard (outlier_guard.h): the mean re-balances work, which is right when the work
// itself is uneven (pipeline stages, sequence lengths) but wrong for a worker that is simply
// slow. In a small job the slow worker drags the mean towards itself: with 4 ranks of which
// one is 30% slower the mean is 1.075x the healthy speed, so S would come out ~7% low.
// `ranks`: those with ops under the key in the window, ascending (the others have no sum to
// add; skipping them leaves every sum as it was).
double kept_mean(const std::vector<double>& sum, const std::vector<double>& count,
                 const std::vector<int>& ranks_with_ops, const std::vector<char>& dropped) {
  double total = 0, n = 0;
  for (int r : ranks_with_ops) {
    const auto i = static_cast<size_t>(r);
    if (dropped[i]) continue;
    total += sum[i];
    n += count[i];
  }
  return n > 0 ? total / n : 0.0;
}

}  // namespace

// Each key's entries are added rank by rank (ascending), each rank's ops in the model's order:
// a rank's sum adds its values in the same order as a per-rank array filled op by op would.
StepSamples collect_samples(const StepModel& m) {
  StepSamples s;
  s.step = m.step;
  s.world = m.world;
  s.rank_stage = m.rank_stage;
  const auto world = static_cast<size_t>(std::max(0, m.world));
  // Each key's stats by its id (created in the ops' order, which sets the key's rule), and the
  // ops by rank (a counting sort, stable).
  std::vector<KeyStats*> duration(m.ideal_keys.size(), nullptr), delay(m.delay_keys.size(), nullptr);
  std::vector<size_t> first(world + 1, 0);
  for (const LogicalOp& op : m.ops) {
    auto& d = duration[static_cast<size_t>(op.key)];
    if (!d) d = &stats_for(&s.durations, m.ideal_keys[static_cast<size_t>(op.key)], op.rule);
    if (op.rule == IdealRule::kMedian) d->samples.push_back(op.own);
    if (op.first_node >= 0) {
      auto& l = delay[static_cast<size_t>(op.delay_key)];
      if (!l) l = &stats_for(&s.delays, m.delay_keys[static_cast<size_t>(op.delay_key)], IdealRule::kMean);
    }
    if (op.rank >= 0 && static_cast<size_t>(op.rank) < world) ++first[static_cast<size_t>(op.rank) + 1];
  }
  KeyStats& markers = stats_for(&s.delays, m.delay_keys[static_cast<size_t>(m.marker_delay_key)], IdealRule::kMean);
  for (size_t r = 0; r < world; ++r) first[r + 1] += first[r];
  const CostTable costs(m);
  std::vector<int> by_rank(first[world]);
  std::vector<size_t> next(first.begin(), first.end() - 1);
  for (size_t o = 0; o < m.ops.size(); ++o) {
    const int r = m.ops[o].rank;
    if (r >= 0 && static_cast<size_t>(r) < world) by_rank[next[static_cast<size_t>(r)]++] = static_cast<int>(o);
  }
  for (size_t r = 0; r < world; ++r) {
    const int rank = static_cast<int>(r);
    for (size_t i = first[r]; i < first[r + 1]; ++i) {
      const LogicalOp& op = m.ops[static_cast<size_t>(by_rank[i])];
      KeyStats* d = duration[static_cast<size_t>(op.key)];
      add_entry(d, rank, op.own);
      if (op.rule == IdealRule::kMean) add_work(d, costs.find(rank, op.microbatch));
      if (op.first_node >= 0) {
        add_entry(delay[static_cast<size_t>(op.delay_key)], rank,
                  m.nodes[static_cast<size_t>(op.first_node)].launch_delay);
      }
    }
    add_entry(&markers, rank, m.nodes[static_cast<size_t>(m.markers[r])].launch_delay);
  }
  return s;
}

void IdealWindow::push(StepSamples samples) {
  for (auto& [key, ks] : samples.durations) {
    for (double x : ks.samples) runs_usable_ = runs_usable_ && x >= 0 && !std::signbit(x);
    std::sort(ks.samples.begin(), ks.samples.end());
  }
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
double IdealWindow::step_level(const std::string& key, bool is_delay, const Scratch& w) const {
  if (!config_.follow_step_level || steps_.size() < 2) return 1.0;
  const StepSamples& last = steps_.back();
  const auto& map = is_delay ? last.delays : last.durations;
  auto it = map.find(key);
  if (it == map.end()) return 1.0;
  const KeyStats& now = it->second;
  // The current step is in the window: its ranks are among the window's.
  double now_sum = 0, now_n = 0, win_sum = 0, win_n = 0;
  size_t j = 0;
  for (int r : w.ranks) {
    if (r >= last.world) break;
    const auto i = static_cast<size_t>(r);
    if (w.dropped[i]) continue;
    while (j < now.ranks.size() && now.ranks[j] < r) ++j;
    if (j < now.ranks.size() && now.ranks[j] == r) {
      now_sum += now.sum[j];
      now_n += now.count[j];
    }
    win_sum += w.sum[i];
    win_n += w.count[i];
  }
  if (now_n <= 0 || win_n <= 0 || now_sum <= 0 || win_sum <= 0) return 1.0;
  return (now_sum / now_n) / (win_sum / win_n);
}

// Per rank, the sums of the key over the window's steps, added in step order. When every step
// has the same ranks under the key (a steady job: always), the steps' entries line up and are
// added as arrays, then spread to the ranks once; otherwise entry by entry.
void IdealWindow::window_sums(int world, Scratch* w) const {
  const KeyStats& first = *w->found.front();
  bool aligned = first.ranks.empty() || first.ranks.back() < world;
  for (const KeyStats* ks : w->found) aligned = aligned && ks->ranks == first.ranks;
  if (aligned) {
    const size_t n = first.ranks.size();
    w->aligned_sum.assign(n, 0.0);
    w->aligned_count.assign(n, 0.0);
    for (const KeyStats* ks : w->found) {
      for (size_t e = 0; e < n; ++e) {
        w->aligned_sum[e] += ks->sum[e];
        w->aligned_count[e] += ks->count[e];
      }
    }
    w->ranks = first.ranks;
    for (size_t e = 0; e < n; ++e) {
      const auto i = static_cast<size_t>(first.ranks[e]);
      w->sum[i] = w->aligned_sum[e];
      w->count[i] = w->aligned_count[e];
      w->seen[i] = 1;
    }
    return;
  }
  for (const KeyStats* ks : w->found) {
    for (size_t e = 0; e < ks->ranks.size(); ++e) {
      const int r = ks->ranks[e];
      if (r >= world) break;  // ascending: the rest are beyond this step's world too
      const auto i = static_cast<size_t>(r);
      if (!w->seen[i]) {
        w->seen[i] = 1;
        w->ranks.push_back(r);
      }
      w->sum[i] += ks->sum[e];
      w->count[i] += ks->count[e];
    }
  }
  std::sort(w->ranks.begin(), w->ranks.end());
}

// The guard (outlier_guard.h) for one compute or delay key, once its window sums are in `w`:
// in one pass over the window's annotated steps, the points of the work fit and each rank's
// sums (work is linear in them, so a rank's fitted work is the fit of its sums).
void IdealWindow::guard(const StepModel& m, Scratch* w) const {
  if (!config_.exclude_outliers) return;
  w->points.clear();
  for (const KeyStats* ks : w->found) {
    if (!ks->work_known || ks->len.size() != ks->ranks.size()) continue;
    for (size_t e = 0; e < ks->ranks.size(); ++e) {
      w->points.push_back({ks->sum[e], ks->len[e], ks->len_sq[e]});
      if (ks->ranks[e] >= m.world) continue;
      const auto i = static_cast<size_t>(ks->ranks[e]);
      w->work_duration[i] += ks->sum[e];
      w->work_len[i] += ks->len[e];
      w->work_len_sq[i] += ks->len_sq[e];
      w->work_count[i] += ks->count[e];
    }
  }
  const WorkFit fit = fit_work(w->points);
  drop_persistent_outliers(config_, {w->sum, w->count, w->ranks, m.rank_stage, fit, w->work_duration, w->work_len,
                                     w->work_len_sq, w->work_count, w->dropped, w->excluded});
}

// The window's per-step levels (each step's median transfer; its samples are sorted) for the
// reference (transfer_reference.h), kept in the Ideals for remember().
double IdealWindow::transfer_ideal(const std::string& key, double window_median, Scratch* w) const {
  TransferReference::Window tw;
  tw.median = window_median;
  tw.now = w->last_has_key;
  for (const KeyStats* ks : w->found) {
    const std::vector<double>& x = ks->samples;
    if (x.empty()) continue;
    const size_t mid = x.size() / 2;
    tw.levels.push_back(x.size() % 2 ? x[mid] : 0.5 * (x[mid - 1] + x[mid]));
  }
  const double ideal = reference_.ideal(key, &tw, w->transfer_keys);
  w->transfer_windows.emplace_back(key, std::move(tw));
  return ideal;
}

double IdealWindow::aggregate(const std::string& key, bool is_delay, const StepModel& m, Scratch* w) const {
  IdealRule rule = IdealRule::kMean;  // the rule of a key is recorded with its samples
  double slots = 0;
  w->found.clear();
  for (const StepSamples& st : steps_) {
    const auto& map = is_delay ? st.delays : st.durations;
    auto it = map.find(key);
    // A step without this key still counts as slots for pauses: nobody paused then.
    slots += static_cast<double>(st.rank_stage.size());
    w->last_has_key = it != map.end();
    if (it == map.end()) continue;
    rule = it->second.rule;
    w->found.push_back(&it->second);
  }
  double value = 0;
  switch (rule) {
    case IdealRule::kMedian:
      if (runs_usable_) {
        w->runs.clear();
        for (const KeyStats* ks : w->found) {
          if (!ks->samples.empty()) w->runs.emplace_back(ks->samples);
        }
        value = median_of_runs(w->runs);
      } else {
        for (const KeyStats* ks : w->found) w->samples.insert(w->samples.end(), ks->samples.begin(), ks->samples.end());
        value = median_of(std::move(w->samples));
      }
      value = transfer_ideal(key, value, w);
      break;
    case IdealRule::kSlotMean: {
      double slot_total = 0;
      for (const KeyStats* ks : w->found) {
        for (size_t e = 0; e < ks->ranks.size() && ks->ranks[e] < m.world; ++e) slot_total += ks->sum[e];
      }
      value = slots > 0 ? slot_total / slots : 0.0;
      break;
    }
    case IdealRule::kMean: {
      if (w->found.empty()) break;
      window_sums(m.world, w);
      guard(m, w);
      const double mean = kept_mean(w->sum, w->count, w->ranks, w->dropped);
      value = mean * step_level(key, is_delay, *w);
      break;
    }
  }
  w->reset();
  return value;
}

Ideals IdealWindow::ideals(const StepModel& m) const {
  Ideals out;
  Scratch w(static_cast<size_t>(std::max(0, m.world)));
  if (!steps_.empty()) {
    for (const auto& [key, ks] : steps_.back().durations) w.transfer_keys += ks.rule == IdealRule::kMedian ? 1 : 0;
  }
  out.duration.assign(m.ideal_keys.size(), 0.0);
  for (size_t k = 0; k < m.ideal_keys.size(); ++k) out.duration[k] = aggregate(m.ideal_keys[k], false, m, &w);
  out.delay.assign(m.delay_keys.size(), 0.0);
  for (size_t k = 0; k < m.delay_keys.size(); ++k) out.delay[k] = aggregate(m.delay_keys[k], true, m, &w);
  out.excluded_ranks.assign(w.excluded.begin(), w.excluded.end());
  out.transfer_windows = std::move(w.transfer_windows);
  return out;
}

}  // namespace sp::online
