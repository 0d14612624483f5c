// Persistence as evidence (online/src/persistence.h): a unit that leads step after step by a
// margin inside the jitter is found; exchangeable units, and a unit that is only noisier, are not.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "persistence.h"
#include "significance.h"

namespace sp::online {
namespace {

// A family of `n` units over `steps` steps: per step every unit's S is 1 + jitter, unit
// `slow` (if >= 0) `lead` later, unit `noisy` (if >= 0) with `noisy_factor` times the jitter;
// the null's draws have `null_jitter` (default: the same).
UnitFamily family(int n, int steps, double jitter, int slow, double lead, int noisy = -1,
                  double noisy_factor = 1.0, unsigned seed = 7, double null_jitter = -1.0) {
  if (null_jitter < 0) null_jitter = jitter;
  UnitFamily f(/*pool_steps=*/20, /*history_steps=*/64, /*z_clip=*/3.0, /*per_unit_offset=*/false);
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  for (int s = 0; s < steps; ++s) {
    std::vector<double> null_draw(static_cast<size_t>(n)), observed(static_cast<size_t>(n));
    for (int u = 0; u < n; ++u) {
      null_draw[static_cast<size_t>(u)] = 1.0 + std::abs(null_jitter * z(rng));
      const double sd = u == noisy ? jitter * noisy_factor : jitter;
      observed[static_cast<size_t>(u)] = 1.0 + std::abs(sd * z(rng)) + (u == slow ? lead : 0.0);
    }
    f.add_null(null_draw);
    f.add_observed(observed);
  }
  return f;
}

TEST(Persistence, SignTestTail) {
  EXPECT_DOUBLE_EQ(sign_test_p(0, 10), 1.0);
  EXPECT_NEAR(sign_test_p(10, 10), 1.0 / 1024.0, 1e-12);
  EXPECT_NEAR(sign_test_p(9, 10), 11.0 / 1024.0, 1e-12);
}

TEST(Persistence, AUnitThatLeadsEveryStepInsideTheJitterIsFound) {
  // The null learned 20% jitter (per-op times that scatter) while the ranks' totals differ by
  // 3%: rank 2, 4% late, is inside each step's jitter, yet ahead on most steps.
  const UnitFamily f = family(4, 40, 0.03, /*slow=*/2, /*lead=*/0.04, -1, 1.0, 7,
                              /*null_jitter=*/0.20);
  const Persistence p = persistence(f, 30);
  EXPECT_EQ(p.unit, 2);
  EXPECT_LT(p.p, 0.01) << "led " << p.led << " of " << p.steps << ", p " << p.p;
}

TEST(Persistence, ExchangeableUnitsAreNotNamed) {
  int named = 0;
  for (unsigned seed = 1; seed <= 100; ++seed) {
    const Persistence p = persistence(family(4, 40, 0.20, -1, 0.0, -1, 1.0, seed), 30);
    named += p.p < 0.01;
  }
  EXPECT_LE(named, 3) << "at most about the level's share of clean windows";
}

TEST(Persistence, ANoisierUnitIsNotAStraggler) {
  // Twice the spread, same centre: it leads more often than its peers, but it is not ahead of
  // each of them on more than half the steps.
  int named = 0;
  for (unsigned seed = 1; seed <= 50; ++seed) {
    named += persistence(family(4, 40, 0.10, -1, 0.0, /*noisy=*/1, 2.0, seed), 30).p < 0.01;
  }
  EXPECT_LE(named, 3);
}

}  // namespace
}  // namespace sp::online
