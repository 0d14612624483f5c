// Internal: the exact summation orders of the numpy/pandas reductions the artifact relies on,
// so that means come out bit for bit the same.
#pragma once

#include <cstddef>
#include <span>

namespace sp::whatif {

// numpy's pairwise summation (np.add.reduce on a contiguous array): blocks of up to 128
// elements summed with 8 interleaved accumulators, larger ranges split in two. T is float or
// double; float sums stay in float, as numpy's do.
template <class T>
T numpy_pairwise_sum(const T* a, size_t n) {
  if (n < 8) {
    T res = T(0);
    for (size_t i = 0; i < n; ++i) res = res + a[i];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] = r[j] + a[i + j];
    }
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res = res + a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

// pandas Series.mean(): the pairwise sum in the column's own type divided by the count in the
// same type (so a float32 column's mean is a float32).
template <class T>
T pandas_series_mean(std::span<const T> v) {
  return numpy_pairwise_sum(v.data(), v.size()) / static_cast<T>(v.size());
}

// pandas' groupby mean kernel: Kahan-compensated summation in row order.
class KahanMean {
 public:
  void add(double val) {
    ++count_;
    const double y = val - comp_;
    const double t = sum_ + y;
    comp_ = t - sum_ - y;
    if (comp_ != comp_) comp_ = 0;  // an infinite value: keep the infinity, not NaN
    sum_ = t;
  }
  double mean() const { return sum_ / static_cast<double>(count_); }
  size_t count() const { return count_; }

 private:
  double sum_ = 0, comp_ = 0;
  size_t count_ = 0;
};

}  // namespace sp::whatif
