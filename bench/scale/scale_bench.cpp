// bench/scale: a job of N simulated ranks on this machine, every rank through the real transport
// (rank_pipeline/) over a real c10d TCPStore, rank 0 with the real analysis (sp_online). See
// bench/README.md for the method and the table.
//
//   sp_scale_bench run --dp 512 --pp 8 [--steps 12 --period-ms 1000 --procs 4 --protocol auto
//                                       --rank0-core C]
//   sp_scale_bench bytes --dp 512 --pp 8 [--gpu]      bytes per rank and step, both codecs
// (`store` and `ranks` are the processes `run` starts.)
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "coordinator.h"
#include "rank_process.h"
#include "synthetic_summaries.h"
#include "tcp_kv_store.h"

namespace {

using namespace sp::bench;

// The store's process: a TCPStore server until SIGTERM, then its CPU and memory to `result`.
volatile sig_atomic_t g_stop = 0;
void on_term(int) { g_stop = 1; }

int run_store(int port, const std::string& result) {
  signal(SIGTERM, on_term);
  char err[512] = {};
  sp_kv_store* kv = sp::pyext::connect_tcp_kv_store("127.0.0.1", port, true, 120000, err, sizeof err);
  if (kv == nullptr) {
    std::fprintf(stderr, "store: %s\n", err);
    return 1;
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::ofstream(result) << nlohmann::json{
      {"cpu_s", static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                    static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6},
      {"max_rss_kb", u.ru_maxrss}}.dump();
  kv->vtable->destroy(kv->self);
  return 0;
}

int run_bytes(const ScaleJob& job) {
  const auto summaries = make_summaries(job);
  std::printf("%s\n", bytes_report(job, summaries).dump(2).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"straggler_probe scale harness: N simulated ranks through the real transport"};
  app.require_subcommand(1);
  ScaleJob job;
  RunOptions run;
  auto add_job = [&](CLI::App* c) {
    c->add_option("--dp", job.dp, "data-parallel ranks")->required();
    c->add_option("--pp", job.pp, "pipeline stages")->required();
    c->add_option("--microbatches", job.microbatches);
    c->add_option("--jitter", job.jitter);
    c->add_option("--steps", job.steps);
    c->add_option("--straggler", job.straggler, "a rank whose compute is --slow times slower");
    c->add_option("--slow", job.slow);
    c->add_flag("--gpu", job.gpu, "add what a GPU rank records (CUPTI, CUDA events, NCCL)");
  };
  auto* run_cmd = app.add_subcommand("run", "simulate the job and measure");
  add_job(run_cmd);
  run_cmd->add_option("--period-ms", run.period_ms);
  run_cmd->add_option("--procs", run.procs, "processes for ranks 1..N-1");
  run_cmd->add_option("--per-host", run.per_host);
  run_cmd->add_option("--protocol", run.protocol)->check(CLI::IsMember({"auto", "host", "rank"}));
  run_cmd->add_option("--out", run.out_dir)->required();
  run_cmd->add_option("--rank0-core", run.rank0_core,
                      "run rank 0's process alone on this core, every other process on the others");
  auto* bytes_cmd = app.add_subcommand("bytes", "bytes per rank and step of the synthetic job");
  add_job(bytes_cmd);
  int port = 0;
  std::string result;
  auto* store_cmd = app.add_subcommand("store", "(internal) the TCPStore server");
  store_cmd->add_option("--port", port)->required();
  store_cmd->add_option("--result", result)->required();
  RankProcessOptions rp;
  auto* ranks_cmd = app.add_subcommand("ranks", "(internal) simulate ranks [from, to)");
  ranks_cmd->add_option("--summaries", rp.summaries)->required();
  ranks_cmd->add_option("--from", rp.from)->required();
  ranks_cmd->add_option("--to", rp.to)->required();
  ranks_cmd->add_option("--per-host", rp.per_host);
  ranks_cmd->add_option("--port", rp.port)->required();
  ranks_cmd->add_option("--period-ms", rp.period_ms);
  ranks_cmd->add_option("--tail-ms", rp.tail_ms);
  ranks_cmd->add_option("--protocol", rp.protocol);
  ranks_cmd->add_option("--out-dir", rp.out_dir);
  ranks_cmd->add_option("--result", rp.result)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (*run_cmd) return run_job(job, run);
    if (*bytes_cmd) return run_bytes(job);
    if (*store_cmd) return run_store(port, result);
    if (*ranks_cmd) return run_rank_process(rp);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sp_scale_bench: %s\n", e.what());
    return 1;
  }
  return 2;
}
