// --steps: "12 20-23" (or "12,20-23") to a sorted list of step numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sp::cli {

// Each token is a step or an inclusive range a-b (a <= b); tokens may also be comma-separated.
// Throws BadInput naming the bad token. The result is sorted and has no repeats.
std::vector<int64_t> parse_step_selection(const std::vector<std::string>& tokens);

}  // namespace sp::cli
