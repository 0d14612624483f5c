// The noise draws of noisy_job.h: counter-based (a hash of seed, stream and site), so that the
// draw of one op does not depend on which other ops were drawn before it.
#include <algorithm>
#include <cmath>

#include "noisy_job.h"

namespace sp::online::testing {
namespace {

// Streams: one per kind of draw, so that two draws of one site are independent.
constexpr uint64_t kFactor = 1, kOutlierHit = 2, kOutlierSize = 3, kDrift = 4, kShift = 5;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t site_hash(uint64_t seed, uint64_t stream, const DurationSite& s) {
  uint64_t h = mix(seed ^ 0x5350'4e4f'4953'45ULL);  // "SPNOISE"
  for (uint64_t v : {stream, static_cast<uint64_t>(s.kind), static_cast<uint64_t>(s.step),
                     static_cast<uint64_t>(static_cast<int64_t>(s.rank)),
                     static_cast<uint64_t>(static_cast<int64_t>(s.peer)),
                     static_cast<uint64_t>(static_cast<int64_t>(s.index))}) {
    h = mix(h ^ v);
  }
  return h;
}

double to_unit(uint64_t h) {  // (0, 1), never 0 or 1
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

bool is_compute(uint32_t kind) {
  return kind == SP_OP_FORWARD || kind == SP_OP_BACKWARD || kind == SP_OP_OPTIMIZER;
}

}  // namespace

NoiseModel NoiseModel::with_jitter(double sigma) {
  NoiseModel m;
  m.compute_sigma = sigma;
  m.data_sigma = 2 * sigma;
  m.comm_sigma = 2 * sigma;
  return m;
}

NoiseSource::NoiseSource(const NoiseModel& model, uint64_t seed, int steps)
    : model_(model), seed_(seed), drift_(static_cast<size_t>(std::max(steps, 0)), 0.0) {
  // A reflected random walk in [0, drift_max], from its middle.
  double x = model.drift_max / 2;
  for (int s = 0; s < steps; ++s) {
    drift_[static_cast<size_t>(s)] = x;
    x += model.drift_sigma * normal(kDrift, DurationSite{0, s, model.drift_host, -1, -1});
    if (model.drift_max <= 0) x = 0;
    else {
      while (x < 0 || x > model.drift_max) x = x < 0 ? -x : 2 * model.drift_max - x;
    }
  }
}

double NoiseSource::uniform(uint64_t stream, const DurationSite& site) const {
  return to_unit(site_hash(seed_, stream, site));
}

double NoiseSource::normal(uint64_t stream, const DurationSite& site) const {
  // Box-Muller on two independent uniforms of the same site.
  const double u1 = to_unit(site_hash(seed_, stream, site));
  const double u2 = to_unit(mix(site_hash(seed_, stream, site) ^ 0xabcdefULL));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double NoiseSource::host_factor(int64_t step, int rank) const {
  if (model_.drift_host < 0 || model_.ranks_per_host <= 0) return 1.0;
  if (rank / model_.ranks_per_host != model_.drift_host) return 1.0;
  if (step < 0 || static_cast<size_t>(step) >= drift_.size()) return 1.0;
  return 1.0 + drift_[static_cast<size_t>(step)];
}

double NoiseSource::outlier(const DurationSite& site, double base) const {
  if (model_.outlier_rate <= 0 || uniform(kOutlierHit, site) >= model_.outlier_rate) return 0.0;
  const double u = uniform(kOutlierSize, site);
  return base * model_.outlier_min * std::pow(u, -1.0 / model_.outlier_alpha);
}

double NoiseSource::fb_shift(int64_t step, int rank, int microbatch) const {
  if (model_.fb_shift <= 0) return 0.0;
  return model_.fb_shift * (2 * uniform(kShift, DurationSite{SP_OP_FORWARD, step, rank, -1, microbatch}) - 1);
}

double NoiseSource::apply(const DurationSite& site, double d, double base) const {
  double sigma = model_.comm_sigma;
  if (is_compute(site.kind)) sigma = model_.compute_sigma;
  if (site.kind == SP_OP_DATA_WAIT) sigma = model_.data_sigma;
  const double z = sigma > 0 ? normal(kFactor, site) : 0.0;
  double out = d * std::exp(sigma * z - sigma * sigma / 2);  // mean 1
  if (is_compute(site.kind)) out *= host_factor(site.step, site.rank);
  return out + outlier(site, base);
}

}  // namespace sp::online::testing
