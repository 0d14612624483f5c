// The probe's own output lines, written verbatim (no logger name, no level): rank 0's step,
// alarm, hang, control and report lines to stdout, the analysis's warnings to stderr. One printer
// for the whole probe: the log's warnings (log.h) are written under the same lock, so that a step
// line, a hang line and a warning never interleave on a shared terminal, from any thread.
//
// A newline is added unless the text ends in one; each line is flushed. Not subject to the log
// level or to silence: these lines are what the user asked the probe for (log_lines=off is how
// they are turned off, before they reach here).
#pragma once

#include <mutex>
#include <string_view>

namespace sp::runtime {

void print_line(std::string_view line);         // stdout
void print_stderr_line(std::string_view line);  // stderr

// How a warning of the rank pipeline and the analysis begins (the runtime's own log writes
// "[straggler_probe] warning: ..." through spdlog instead). Components that hand their warnings
// to a sink build them with it; print_warning_line writes one directly.
inline constexpr std::string_view kWarningLinePrefix = "straggler_probe: WARNING: ";
void print_warning_line(std::string_view message);  // stderr, kWarningLinePrefix + message

// The lock every whole line of the probe's output is written under (the log takes it around
// each warning). Never destroyed: a line may be printed from a thread that outlives exit().
std::mutex& output_lock();

}  // namespace sp::runtime
