#include "robust_stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

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

}  // namespace sp::online
