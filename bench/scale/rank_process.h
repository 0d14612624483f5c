// One process of a simulated job (bench/scale): ranks [from, to), each with its real transport
// (rank_pipeline/src/transport/transport.h: its own thread for rank 0 and for the per-rank protocol; the
// host-aggregated protocol's state machine, host_transport.h, driven by a few threads for the
// others) and its own client of the job's TCPStore, fed with the
// synthetic job's summaries at a fixed step period; rank 0 (when in range) also runs the real
// analysis worker (AnalysisWorker over OnlineAnalyzer). It prints "ready" once every rank is
// started, reads step 0's time (CLOCK_MONOTONIC ns) from stdin, and writes what it measured to
// a JSON file.
#pragma once

#include <cstdint>
#include <string>

namespace sp::bench {

struct RankProcessOptions {
  std::string summaries;     // write_summaries() file
  int from = 0, to = 0;      // ranks simulated here
  int per_host = 8;          // ranks per simulated host ("node-<rank / per_host>")
  std::string store_host = "127.0.0.1";
  int port = 0;
  int period_ms = 1000;      // one step per period
  int tail_ms = 5000;        // after the last step: time for rank 0 to finish
  std::string protocol = "auto";  // auto | host | rank
  int max_lag = 8;
  std::string out_dir;       // rank 0's JSONL and report (empty: none)
  std::string result;        // where the measurements go (JSON)
};

int run_rank_process(const RankProcessOptions& o);

}  // namespace sp::bench
