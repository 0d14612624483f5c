// FixGains (online/src/decision/fix_gain.h): the worker rule's test that fixing a rank saves more than
// fixing jitter's slowest rank does, and the gamma law it uses.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "decision/fix_gain.h"

namespace sp::online {
namespace {

// Q(a, x) against closed forms: shape 1 is the exponential's tail e^-x; an integer shape k is
// the Erlang tail e^-x sum_{i<k} x^i / i!; shape 1/2 is erfc(sqrt(x)). Both branches (series
// below a + 1, continued fraction above) are covered.
TEST(FixGain, GammaUpperMatchesClosedForms) {
  for (double x : {0.01, 0.5, 1.0, 2.0, 5.0, 20.0, 60.0}) {
    EXPECT_NEAR(gamma_upper(1.0, x), std::exp(-x), 1e-12 * std::max(1.0, std::exp(-x)) + 1e-15) << x;
    for (int k : {2, 5, 32}) {
      double term = 1, sum = 0;
      for (int i = 0; i < k; ++i) {
        sum += term;
        term *= x / (i + 1);
      }
      const double want = std::exp(-x) * sum;
      EXPECT_NEAR(gamma_upper(k, x), want, 1e-10 * want + 1e-14) << "k " << k << " x " << x;
    }
    EXPECT_NEAR(gamma_upper(0.5, x), std::erfc(std::sqrt(x)), 1e-10) << x;
  }
  EXPECT_EQ(gamma_upper(2.0, 0.0), 1.0);
  EXPECT_EQ(gamma_upper(2.0, -1.0), 1.0);
}

// A null of exponential best gains (mean 1%): a rank gaining like the null's best is not
// significant; one gaining 10x the null mean this step is, P = e^-10; over 8 steps a rank that
// gains the null mean on average is not, one gaining 3x is.
TEST(FixGain, StepAndWindowTestsAgainstTheNullsBestGain) {
  std::mt19937 rng(3);
  std::exponential_distribution<double> best(100.0);
  FixGains gains(1000, 64);
  for (int i = 0; i < 1000; ++i) gains.add_null(best(rng));
  EXPECT_NEAR(gains.null_mean(), 0.01, 0.001);
  EXPECT_EQ(gains.step_p(0), 1.0);  // no step seen yet
  for (int s = 0; s < 8; ++s) gains.add_observed({0.01, 0.03, 0.0});
  EXPECT_GT(gains.window_p(0, 8), 0.2);
  EXPECT_LT(gains.window_p(1, 8), 1e-4);
  EXPECT_EQ(gains.window_p(2, 8), 1.0);  // a rank whose fix saves nothing
  EXPECT_NEAR(gains.recent_mean(1, 8), 0.03, 1e-6);
  gains.add_observed({0.10, 0.0, 0.0});
  EXPECT_NEAR(gains.step_p(0), std::exp(-10.0), std::exp(-10.0) * 0.3);
  EXPECT_EQ(gains.step_p(5), 1.0);  // a unit the step did not have
}

// The floor: gains below the replay's resolution count as none, and a null with no spread
// (a job without jitter) still gives a law.
TEST(FixGain, TheFloorAndANullWithoutSpread) {
  FixGains gains(16, 16);
  for (int i = 0; i < 16; ++i) gains.add_null(0.0);
  gains.set_floor(1e-6);
  gains.add_observed({1e-7, 0.05});
  EXPECT_EQ(gains.step_p(0), 1.0);
  EXPECT_LT(gains.step_p(1), 1e-9);
}

}  // namespace
}  // namespace sp::online
