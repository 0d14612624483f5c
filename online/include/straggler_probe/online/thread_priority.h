// Rank 0's analysis shares rank 0's CPU with training: its thread runs at a lower priority, so
// that under contention the scheduler gives the training threads the core first. On Linux a
// thread has its own nice value; +10 weighs about 1/10 of a nice-0 thread, which is also the
// share of a core the analysis is budgeted for (OnlineConfig::cpu_budget).
#pragma once

#include <string>

namespace sp::online {

inline constexpr int kAnalysisNiceIncrement = 10;

// Raises the calling thread's nice value by `increment` (never above 19). false, with a
// one-line reason in *why, when the system does not allow it (the analysis then runs at the
// thread's current priority; nothing else changes).
bool lower_this_thread_priority(int increment, std::string* why);

}  // namespace sp::online
