// Faults planted into the noisy synthetic job, and each step's ground truth from twin runs of
// the same seed: without any fault (the measured slowdown), and without each fault in turn
// (which fault counts on a step when two are planted).
#include "noisy_job.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace sp::online::testing {
namespace {

constexpr uint64_t kGcStream = NoiseSource::kFirstFreeStream;
constexpr uint64_t kStallStream = kGcStream + 1;
constexpr uint64_t kSeqStream = kGcStream + 2;

// A pause's length: log-normal around its median, sigma 0.2.
double pause_draw(const NoiseSource& noise, uint64_t stream, int64_t step, int rank, double median) {
  return median * std::exp(0.2 * noise.normal(stream, DurationSite{0, step, rank, -1, -1}));
}

// Long-tailed sequence lengths (Pareto, alpha 1.2, from 128 tokens, at most 2048), as
// synthetic_job.cpp draws them. A micro-batch costs sum(len + len^2 / 1024), divided by the
// expected cost of its sequences, so that the mean factor is about 1 (the floor to whole tokens
// is left out of the expectation).
class SeqLens {
 public:
  SeqLens(const NoiseSource& noise, int seqs) : noise_(noise), seqs_(std::max(seqs, 1)) {
    const double xm = kMin, a = kAlpha, c = kMax;
    // E[g(min(X, c))], g(x) = x + x^2 / 1024, X ~ Pareto(xm, a): the integral below c, plus
    // g(c) times P(X > c).
    auto part = [&](double p) { return a * std::pow(xm, a) * (std::pow(c, p - a) - std::pow(xm, p - a)) / (p - a); };
    expected_ = part(1) + part(2) / 1024.0 + (c + c * c / 1024.0) * std::pow(xm / c, a);
  }
  int length(int64_t step, int rank, int mb, int i) const {
    const double u = noise_.uniform(kSeqStream, DurationSite{SP_OP_FORWARD, step, rank, i, mb});
    return static_cast<int>(std::min(kMax, std::floor(kMin / std::pow(u, 1.0 / kAlpha))));
  }
  double factor(int64_t step, int rank, int mb) const {
    double cost = 0;
    for (int i = 0; i < seqs_; ++i) {
      const double len = length(step, rank, mb, i);
      cost += len + len * len / 1024.0;
    }
    return cost / (seqs_ * expected_);
  }
  std::string text(int64_t step, int rank, int mb) const {
    std::string t;
    for (int i = 0; i < seqs_; ++i) {
      if (i) t += ',';
      t += std::to_string(length(step, rank, mb, i));
    }
    return t;
  }

 private:
  static constexpr double kMin = 128, kAlpha = 1.2, kMax = 2048;
  const NoiseSource& noise_;
  int seqs_;
  double expected_ = 1;
};

bool is_layer_compute(uint32_t kind) { return kind == SP_OP_FORWARD || kind == SP_OP_BACKWARD; }

// The scenario's durations with some of its faults enabled: faults first, then the noise.
class FaultedJob {
 public:
  FaultedJob(const NoisyScenario& sc, const NoiseSource& noise, const SeqLens& seq,
             std::vector<bool> enabled)
      : sc_(sc), noise_(noise), seq_(seq), enabled_(std::move(enabled)) {
    const int world = sc.job.dp * sc.job.pp;
    for (size_t i = 0; i < sc.faults.size(); ++i) {
      if (sc.faults[i].kind != FaultKind::kSeqLens) continue;
      seq_mean_.assign(static_cast<size_t>(sc.steps), 0.0);  // the balanced twin's factor
      for (int s = 0; s < sc.steps; ++s) {
        double sum = 0;
        for (int r = 0; r < world; ++r) {
          for (int mb = 0; mb < sc.job.microbatches; ++mb) sum += seq_.factor(sc.first_step + s, r, mb);
        }
        seq_mean_[static_cast<size_t>(s)] = sum / (world * sc.job.microbatches);
      }
    }
  }

  // `local` numbers steps from this run's first; the draws and faults use the job's numbers.
  double duration(const DurationSite& local, double base) const {
    DurationSite site = local;
    site.step += sc_.first_step;
    double d = base;
    for (size_t i = 0; i < sc_.faults.size(); ++i) d = with_fault(i, site, d);
    return noise_.apply(site, d, base) + shifted(site);
  }

  std::vector<std::tuple<int64_t, int, double>> gc_pauses() const {
    std::vector<std::tuple<int64_t, int, double>> out;
    for (size_t i = 0; i < sc_.faults.size(); ++i) {
      const Fault& f = sc_.faults[i];
      if (f.kind != FaultKind::kGcPauses || !enabled_[i]) continue;
      for (int64_t s = sc_.first_step; s < sc_.first_step + sc_.steps; ++s) {
        if (f.applies(s)) {
          out.emplace_back(s - sc_.first_step, f.rank, pause_draw(noise_, kGcStream, s, f.rank, f.pause_s));
        }
      }
    }
    return out;
  }

 private:
  double with_fault(size_t i, const DurationSite& site, double d) const {
    const Fault& f = sc_.faults[i];
    const int dp = sc_.job.dp, pp = sc_.job.pp;
    const bool on = enabled_[i];
    switch (f.kind) {
      case FaultKind::kSlowRank:
        return on && site.rank == f.rank && f.applies(site.step) &&
                       (is_layer_compute(site.kind) || site.kind == SP_OP_OPTIMIZER)
                   ? d * (1 + f.slowdown) : d;
      case FaultKind::kHeavyLastStage:  // off: the same extra work spread over every stage
        if (!is_layer_compute(site.kind) || !f.applies(site.step)) return d;
        if (!on) return d * (1 + f.slowdown / pp);
        return site.rank / dp == pp - 1 ? d * (1 + f.slowdown) : d;
      case FaultKind::kSeqLens:  // off: every micro-batch of the step at the step's mean cost
        if (!is_layer_compute(site.kind) || !f.applies(site.step)) return d;
        return d * (on ? seq_.factor(site.step, site.rank, site.index)
                       : seq_mean_[static_cast<size_t>(site.step - sc_.first_step)]);
      case FaultKind::kSlowLink: {
        if (!on || !f.applies(site.step)) return d;
        const bool hit = pp == 1 ? site.kind == SP_OP_COLLECTIVE && site.rank / dp == f.rank / dp
                                 : site.kind == SP_OP_SEND &&
                                       std::minmax(site.rank, site.peer) == std::minmax(f.rank, f.rank + dp);
        return hit ? d * (1 + f.slowdown) : d;
      }
      case FaultKind::kDataStall:
        return on && site.kind == SP_OP_DATA_WAIT && site.rank == f.rank && f.applies(site.step)
                   ? d + pause_draw(noise_, kStallStream, site.step, f.rank, f.pause_s) : d;
      case FaultKind::kGcPauses:
        return d;  // through SyntheticJob::gc
    }
    return d;
  }

  // NoiseModel::fb_shift: a share of the micro-batch's forward time (as the faults left it,
  // before its noise) added to the forward and taken from its backward.
  double shifted(const DurationSite& site) const {
    if (!is_layer_compute(site.kind)) return 0.0;
    const double share = noise_.fb_shift(site.step, site.rank, site.index);
    if (share == 0.0) return 0.0;
    DurationSite forward = site;
    forward.kind = SP_OP_FORWARD;
    double f = sc_.job.forward_s;
    for (size_t i = 0; i < sc_.faults.size(); ++i) f = with_fault(i, forward, f);
    return site.kind == SP_OP_FORWARD ? share * f : -share * f;
  }

  const NoisyScenario& sc_;
  const NoiseSource& noise_;
  const SeqLens& seq_;
  std::vector<bool> enabled_;
  std::vector<double> seq_mean_;
};

void check(const NoisyScenario& sc) {
  const int world = sc.job.dp * sc.job.pp;
  if (sc.steps <= 0 || world <= 0) throw std::invalid_argument("noisy job: no steps or no ranks");
  if (sc.first_step < 0) throw std::invalid_argument("noisy job: first_step < 0");
  for (const Fault& f : sc.faults) {
    if (f.every < 1) throw std::invalid_argument("noisy job: a fault's `every` must be >= 1");
    if (f.rank < 0 || f.rank >= world) throw std::invalid_argument("noisy job: fault rank out of range");
    if (f.kind == FaultKind::kHeavyLastStage && sc.job.pp < 2)
      throw std::invalid_argument("noisy job: a heavier last stage needs a pipeline");
    if (f.kind == FaultKind::kSlowLink && sc.job.pp > 1 && f.rank / sc.job.dp == sc.job.pp - 1)
      throw std::invalid_argument("noisy job: a slow p2p link starts at a stage before the last");
  }
}

std::vector<std::string> targets(const NoisyScenario& sc, const SeqLens& seq, const Fault& f,
                                 int64_t step) {
  const int world = sc.job.dp * sc.job.pp;
  switch (f.kind) {
    case FaultKind::kHeavyLastStage:
      return {"stage:" + std::to_string(sc.job.pp - 1)};
    case FaultKind::kSlowLink:  // a slow member of a collective ends with the others: unnamed
      if (sc.job.pp == 1) return {};
      return {"rank:" + std::to_string(f.rank), "rank:" + std::to_string(f.rank + sc.job.dp)};
    case FaultKind::kSeqLens: {  // the rank with the most work this step
      int best = 0;
      double most = -1;
      for (int r = 0; r < world; ++r) {
        double w = 0;
        for (int mb = 0; mb < sc.job.microbatches; ++mb) w += seq.factor(step, r, mb);
        if (w > most) most = w, best = r;
      }
      return {"rank:" + std::to_string(best)};
    }
    default:
      return {"rank:" + std::to_string(f.rank)};
  }
}

}  // namespace

std::string_view fault_cause(FaultKind kind) {
  switch (kind) {
    case FaultKind::kSlowRank: return "worker";
    case FaultKind::kGcPauses: return "gc";
    case FaultKind::kSeqLens: return "seq-imbalance";
    case FaultKind::kHeavyLastStage: return "stage-imbalance";
    case FaultKind::kSlowLink: return "comm";
    case FaultKind::kDataStall: return "cpu-delay";
  }
  return "none";
}

NoisyRun run_noisy(const NoisyScenario& sc) {
  check(sc);
  const NoiseSource noise(sc.noise, sc.seed, static_cast<int>(sc.first_step + sc.steps));
  const SeqLens seq(noise, sc.job.seqs_per_microbatch);
  const size_t world = static_cast<size_t>(sc.job.dp * sc.job.pp);
  // Per (local step, rank): the compute durations drawn (NoisyScenario::cpu_times). Not the ops'
  // spans: a DDP backward's op ends after its buckets' all-reduces, a wait and no work.
  std::vector<double> work_s(sc.cpu_times ? static_cast<size_t>(sc.steps) * world : 0, 0.0);
  auto run_with = [&](std::vector<bool> enabled, std::vector<double>* work = nullptr) {
    const FaultedJob faulted(sc, noise, seq, std::move(enabled));
    SyntheticJob job = sc.job;
    job.jitter = 0;
    job.seq_lens = false;
    job.gc = faulted.gc_pauses();
    job.duration_hook = [&faulted, work, world](const DurationSite& site, double d) {
      const double drawn = faulted.duration(site, d);
      const bool compute = is_layer_compute(site.kind) || site.kind == SP_OP_OPTIMIZER;
      const size_t at = static_cast<size_t>(site.step) * world + static_cast<size_t>(site.rank);
      if (work && compute && at < work->size()) (*work)[at] += drawn;
      return drawn;
    };
    return run_synthetic(job, sc.steps);
  };
  const size_t n = sc.faults.size();
  NoisyRun out;
  out.run = run_with(std::vector<bool>(n, true), sc.cpu_times ? &work_s : nullptr);
  out.clean_step_time_s = run_with(std::vector<bool>(n, false)).step_time_s;
  std::vector<std::vector<double>> without(n);  // step times without fault i
  for (size_t i = 0; i < n && n > 1; ++i) {
    std::vector<bool> enabled(n, true);
    enabled[i] = false;
    without[i] = run_with(enabled).step_time_s;
  }
  for (auto& step : out.run.steps) {  // the job's step numbers and collective sequence
    for (auto& s : step) {
      s.step += sc.first_step;
      for (sp_event& e : s.ops) {
        if (e.kind == SP_OP_COLLECTIVE) e.seq += static_cast<uint64_t>(sc.first_step * sc.job.buckets);
      }
    }
  }
  for (size_t local = 0; local < out.run.steps.size() && sc.cpu_times; ++local) {
    for (auto& s : out.run.steps[local]) {
      const size_t at = local * world + static_cast<size_t>(s.rank);
      s.step_cpu_ns = at < work_s.size() ? static_cast<uint64_t>(std::llround(work_s[at] * 1e9)) : 0;
    }
  }
  for (const Fault& f : sc.faults) {
    if (f.kind != FaultKind::kSeqLens || !sc.job.annotate) continue;
    for (auto& step : out.run.steps) {
      for (auto& s : step) {
        if (!f.applies(s.step)) continue;
        for (int mb = 0; mb < sc.job.microbatches; ++mb) s.annotations.push_back({mb, "seq_lens", seq.text(s.step, s.rank, mb)});
      }
    }
  }
  for (int local = 0; local < sc.steps; ++local) {
    const size_t si = static_cast<size_t>(local);
    const int64_t s = sc.first_step + local;
    StepTruth t;
    t.step = s;
    const double time = out.run.step_time_s[si];
    t.measured_slowdown = time / out.clean_step_time_s[si];
    for (size_t i = 0; i < n; ++i) {
      const Fault& f = sc.faults[i];
      if (!f.applies(s)) continue;
      FaultEffect e{std::string(fault_cause(f.kind)), targets(sc, seq, f, s),
                    n > 1 ? time / without[i][si] : t.measured_slowdown};
      if (e.slowdown >= 1 + sc.min_effect) t.active.push_back(std::move(e));
      else t.marginal = true;
    }
    std::stable_sort(t.active.begin(), t.active.end(),
                     [](const FaultEffect& a, const FaultEffect& b) { return a.slowdown > b.slowdown; });
    if (!t.active.empty()) t.marginal = false;
    out.truth.push_back(std::move(t));
  }
  return out;
}

}  // namespace sp::online::testing
