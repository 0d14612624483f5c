// Robust location and scale, shared by the ideal window and the noise model: the median
// (nth_element; the mean of the two middle values for an even count), the median of sorted
// runs, the normal-consistent sd from the median absolute deviation, and the dispersion
// estimates the significance tests and the transfer reference share (a series' step-to-step
// sd blind to a change of level; the upper end of an MAD sd's band from few values).
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

// The upper end of a one-sided 95% band for an MAD-based sd from `dof` normal deviations (dof
// >= 1; relative standard error 1.1664 / sqrt(dof)): the dispersion taken when it is estimated
// from few steps.
double sd_upper_band(double mad_sd, double dof);
// A series' step-to-step dispersion, blind to one change of level: the smaller of the robust
// sd around its median and that of its successive differences (/ sqrt 2). A fault from some
// step on is a second mode around the median but one difference. Reorders `series`; needs two
// values (0 otherwise).
double level_robust_sd(std::vector<double>* series);

}  // namespace sp::online
