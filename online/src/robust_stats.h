// Robust location and scale, shared by the ideal window's outlier guard and the noise model:
// the median (nth_element; the mean of the two middle values for an even count) and the
// normal-consistent sd from the median absolute deviation.
#pragma once

#include <vector>

namespace sp::online {

// The median of `v` (reordered); 0 when empty.
double median_inplace(std::vector<double>* v);
// sd estimate 1.4826 x median(|x - median(x)|) of `v` (overwritten); 0 when empty.
double mad_sigma(std::vector<double>* v);

}  // namespace sp::online
