#include "tail_probability.h"

#include <cmath>

namespace sp::online {

double sidak(double p, double n) {
  if (p >= 1) return 1;
  if (p <= 0) return 0;
  return -std::expm1(n * std::log1p(-p));
}

double normal_upper(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace sp::online
