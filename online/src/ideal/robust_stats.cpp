#include "robust_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace sp::online {

double median_inplace(std::vector<double>* v) {
  if (v->empty()) return 0;
  const size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(mid), v->end());
  const double hi = (*v)[mid];
  if (v->size() % 2) return hi;
  const double lo = *std::max_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

double mad_sigma(std::vector<double>* v) {
  if (v->empty()) return 0;
  const double med = median_inplace(v);
  for (double& x : *v) x = std::fabs(x - med);
  return 1.4826 * median_inplace(v);
}

namespace {

// For non-negative doubles (no NaN, no -0) the order of the values is that of their bits.
uint64_t order_bits(double x) { return std::bit_cast<uint64_t>(x); }
double from_order_bits(uint64_t b) { return std::bit_cast<double>(b); }

size_t count_at_most(const std::vector<Run>& runs, double v) {
  size_t n = 0;
  for (const Run& r : runs) n += static_cast<size_t>(std::upper_bound(r.begin(), r.end(), v) - r.begin());
  return n;
}

// The k-th smallest (from 0) of the runs' values together: the smallest value with more than k
// values at or below it, found by bisection over the bit patterns (a value of the runs, exactly).
double kth_of_runs(const std::vector<Run>& runs, size_t k) {
  uint64_t lo = order_bits(std::numeric_limits<double>::infinity()), hi = 0;
  for (const Run& r : runs) {
    lo = std::min(lo, order_bits(r.front()));
    hi = std::max(hi, order_bits(r.back()));
  }
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (count_at_most(runs, from_order_bits(mid)) > k) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return from_order_bits(lo);
}

}  // namespace

// The middle value, or the mean of the two middle ones (the lower being the largest value
// below the upper, or the upper itself).
double median_of_runs(const std::vector<Run>& runs) {
  size_t n = 0;
  for (const Run& r : runs) n += r.size();
  if (n == 0) return 0;
  const size_t mid = n / 2;
  const double hi = kth_of_runs(runs, mid);
  if (n % 2) return hi;
  size_t below = 0;
  double lo = -std::numeric_limits<double>::infinity();
  for (const Run& r : runs) {
    const auto at = std::lower_bound(r.begin(), r.end(), hi);
    below += static_cast<size_t>(at - r.begin());
    if (at != r.begin()) lo = std::max(lo, *(at - 1));
  }
  if (below <= mid - 1) lo = hi;
  return 0.5 * (lo + hi);
}

double sd_upper_band(double mad_sd, double dof) {
  constexpr double kZ95 = 1.6448536269514722;  // one-sided 95%
  return mad_sd * std::exp(kZ95 * 1.1664 / std::sqrt(std::max(1.0, dof)));
}

double level_robust_sd(std::vector<double>* series) {
  if (series->size() < 2) return 0;
  std::vector<double> differences;
  differences.reserve(series->size() - 1);
  for (size_t i = 1; i < series->size(); ++i) differences.push_back(std::fabs((*series)[i] - (*series)[i - 1]));
  const double successive = 1.4826 * median_inplace(&differences) / std::sqrt(2.0);
  return std::min(mad_sigma(series), successive);
}

}  // namespace sp::online
