// bench/scale's `run`: generates the job's summaries, starts the store's process, rank 0's
// process and a few processes for the other ranks, waits, and turns what they measured into one
// row of the table (bench/README.md): analysis per step, latency, store operations and bytes at
// rank 0 and at the store, rank 0's CPU and memory.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "synthetic_summaries.h"

namespace sp::bench {

struct RunOptions {
  int period_ms = 1000;
  int procs = 4;
  int per_host = 8;
  std::string protocol = "auto";
  std::string out_dir;
  // >= 0: rank 0's process runs on this core alone and every other process (the store, the
  // simulated ranks) on the other cores. A real rank 0 shares its host with its own training,
  // not with the 4095 other ranks this harness simulates on the same machine.
  int rank0_core = -1;
};

int run_job(const ScaleJob& job, const RunOptions& o);

// Summary bytes per rank and step (mean, max) in the codec's version 2 and what version 1 wrote.
nlohmann::json bytes_report(const ScaleJob& job,
                            const std::vector<std::vector<std::string>>& summaries);

}  // namespace sp::bench
