// The sections of rank 0's report that only the rank pipeline knows: every rank's clock offset to
// rank 0 (the clock protocol runs here) and what the runtime's GPU capture did. They go to
// OnlineAnalyzer::write_report, the one writer of report.json, with every report it writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock/clock_sync.h"
#include "straggler_probe/online/analyzer.h"
#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {

// "clock": each rank's offset to rank 0, its uncertainty, RTT, skew and failures.
nlohmann::ordered_json clock_section(const std::vector<RankClock>& rows,
                                     std::chrono::milliseconds period);

// "capture": {"gpu": ...}: active / stopped with its counters, or inactive and why (said once,
// here). Only when GPU capture ran and `with_kernels`: "gpu_top_kernels" and the file
// gpu_kernels_rank<rank>.txt (the top kernels per region type).
// `runtime`: this process's (runtime_calls.h), whose GPU calls say what the capture did.
void add_gpu_capture(online::ReportOptions* options, const RuntimeCalls& runtime, int rank,
                     bool with_kernels, uint32_t top_k = 10);

}  // namespace sp::rank_pipeline
