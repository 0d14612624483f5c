// Step selection for --steps and --timeline-steps.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::cli {

// "12 20-23" (or "12,20-23") to a sorted list of step numbers: each token is a step or an
// inclusive range a-b (a <= b). Throws BadInput naming `option` and the bad token. Sorted, no
// repeats.
std::vector<int64_t> parse_step_selection(const std::vector<std::string>& tokens,
                                          const std::string& option = "--steps");

// The steps the trace has rows of.
std::set<int64_t> distinct_steps(const whatif::TraceTable& trace);

// The selected steps that are `available`, in order. Selected steps that are not available
// are reported as a warning (never silently dropped); none available is BadInput. `option`
// names the option in messages.
std::vector<int64_t> pick_steps(const std::string& option, const std::vector<std::string>& tokens,
                                const std::set<int64_t>& available);

// A timeline beyond about a million events is slow to write and too big for Perfetto's UI.
inline constexpr size_t kMaxTimelineEvents = 1'000'000;

// What `analyze` draws unless --timeline-steps says otherwise: about 14 MB of JSON, which
// Perfetto's UI opens at once and which is written in a few milliseconds (bench/README.md).
inline constexpr size_t kAnalyzeTimelineEvents = 100'000;

// Default --timeline-steps: analysed steps whose rows, drawn twice (real and ideal), stay
// within `budget` events, taken in `preference` order (empty: ascending, i.e. the first steps;
// analyze gives the steps by descending slowdown) until the next one does not fit; at least
// one step. Returned ascending. Warns when steps are left out.
std::vector<int64_t> default_timeline_steps(const whatif::TraceTable& trace, const std::vector<int64_t>& analysed,
                                            size_t budget = kMaxTimelineEvents,
                                            const std::vector<int64_t>& preference = {});

}  // namespace sp::cli
