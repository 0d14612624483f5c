// The synthetic generator's random numbers: our own xoshiro256** and transforms, because the
// standard library's distributions differ between implementations and a seed must give the
// same trace everywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace sp::whatif::synth {

class Random {
 public:
  explicit Random(uint64_t seed) {
    // splitmix64 spreads any seed (even 0) over the whole state, as xoshiro's authors advise.
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in (0, 1): never 0, so log() below is always finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

  // Standard normal by Box-Muller (one value per call keeps the stream order simple).
  double normal() {
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // Mean-one log-normal factor exp(sigma * Z - sigma^2 / 2); exactly 1 when sigma is 0.
  double lognormal_factor(double sigma) {
    if (sigma <= 0.0) return 1.0;
    return std::exp(sigma * normal() - 0.5 * sigma * sigma);
  }

  double exponential(double mean) { return mean <= 0.0 ? 0.0 : -mean * std::log(uniform()); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4] = {};
};

}  // namespace sp::whatif::synth
