// Robust location and scale, shared by the ideal window and the noise model: the median
// (nth_element; the mean of the two middle values for an even count), the median of sorted
// runs, and the normal-consistent sd from the median absolute deviation.
#pragma once

#include <span>
#include <vector>

namespace sp::online {

// The median of `v` (reordered); 0 when empty.
double median_inplace(std::vector<double>* v);
// sd estimate 1.4826 x median(|x - median(x)|) of `v` (overwritten); 0 when empty.
double mad_sigma(std::vector<double>* v);

using Run = std::span<const double>;  // values sorted ascending
// median_inplace's value for the runs' values together, selected from the sorted runs (bisection
// over the values' bit patterns: a binary search per run and pass, at most 64 passes) instead of
// gathering them. Every value must be >= 0, not NaN and not -0 (their order is their bits').
double median_of_runs(const std::vector<Run>& runs);

}  // namespace sp::online
