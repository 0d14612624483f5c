// Tail probabilities shared by the significance tests (decision/significance.h) and the
// transfer reference (transfer_reference.h): the standard normal's upper tail and the Sidak
// correction for the smallest of n p-values.
#pragma once

namespace sp::online {

// 1 - (1 - p)^n, exact for small p: the chance that the smallest of n independent p-values is
// at most p.
double sidak(double p, double n);
// Upper tail of the standard normal.
double normal_upper(double z);

}  // namespace sp::online
