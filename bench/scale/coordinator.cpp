#include "coordinator.h"

#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace sp::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct Child {
  pid_t pid = -1;
  std::FILE* to = nullptr;    // its stdin
  std::FILE* from = nullptr;  // its stdout
};

// Which cores a child runs on: all (the default), only `core`, or every core but `core`.
struct Placement {
  int core = -1;
  bool alone = false;  // true: only `core`; false: every core but `core`
};

// In the child, before exec: a failure leaves the child where it was and says so on its log.
void place(const Placement& p) {
  if (p.core < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (p.alone) {
    CPU_SET(p.core, &set);
  } else {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < cores; ++c) {
      if (c != p.core) CPU_SET(static_cast<int>(c), &set);
    }
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "sp_scale_bench: could not set this process's cores (core %d)\n", p.core);
  }
}

Child spawn(const std::vector<std::string>& args, const std::string& log, const Placement& where = {}) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    std::FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    place(where);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  return Child{pid, fdopen(in[1], "w"), fdopen(out[0], "r")};
}

// Waits for the child's "ready" line; false when it ended first.
bool ready(const Child& c) {
  char line[64] = {};
  return std::fgets(line, sizeof line, c.from) != nullptr && std::string(line) == "ready\n";
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("no result in " + p.string());
  return json::parse(in);
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "straggler_probe step=12 ..." -> 12; -1 for other lines.
int64_t step_of(const std::string& line) {
  const std::string head = "straggler_probe step=";
  if (line.rfind(head, 0) != 0) return -1;
  return std::strtoll(line.c_str() + head.size(), nullptr, 10);
}

json per_step(const json& store_delta, int steps) {
  json out;
  double ops = 0;
  for (const auto& [k, v] : store_delta.items()) {
    if (k == "bytes_out" || k == "bytes_in") continue;
    out[k] = v.get<double>() / steps;
    ops += v.get<double>();
  }
  out["ops"] = ops / steps;
  out["bytes_to_store"] = store_delta["bytes_out"].get<double>() / steps;
  out["bytes_from_store"] = store_delta["bytes_in"].get<double>() / steps;
  out["bytes"] = (store_delta["bytes_out"].get<double>() + store_delta["bytes_in"].get<double>()) / steps;
  return out;
}

void add_into(json* total, const json& delta) {
  for (const auto& [k, v] : delta.items()) (*total)[k] = total->value(k, 0.0) + v.get<double>();
}

// One row of the table from the processes' results.
json summarize(const ScaleJob& job, const RunOptions& o, const json& rank0,
               const std::vector<json>& others, const json& store) {
  const int steps = job.steps;
  const int world = job.dp * job.pp;
  std::vector<int64_t> last_push(static_cast<size_t>(steps), 0);
  json store_total = json::object();
  for (const json* r : std::vector<const json*>{&rank0}) add_into(&store_total, (*r)["store"]);
  for (const json& r : others) add_into(&store_total, r["store"]);
  for (const json* r : std::vector<const json*>{&rank0}) {
    for (int s = 0; s < steps; ++s) last_push[s] = std::max(last_push[s], (*r)["pushed_ns"][s].get<int64_t>());
  }
  for (const json& r : others) {
    for (int s = 0; s < steps; ++s) last_push[s] = std::max(last_push[s], r["pushed_ns"][s].get<int64_t>());
  }
  // Every step's line, and apart the lines of analysed steps (a skipped step's line says so at
  // once, so it is no measure of how long a verdict takes).
  std::vector<double> latency_ms, analysed_ms;
  json by_step = json::array();
  for (const auto& entry : rank0["lines"]) {
    const std::string& line = entry[1].get<std::string>();
    const int64_t s = step_of(line);
    if (s < 0 || s >= steps) continue;
    const double ms = static_cast<double>(entry[0].get<int64_t>() - last_push[static_cast<size_t>(s)]) / 1e6;
    const bool skipped = line.find(" skipped reason=") != std::string::npos;
    latency_ms.push_back(ms);
    if (!skipped) analysed_ms.push_back(ms);
    by_step.push_back({{"step", s}, {"latency_ms", ms}, {"analysed", !skipped}});
  }
  const double analyzed = rank0["steps_analyzed"].get<double>();
  json row;
  row["ranks"] = world;
  row["dp"] = job.dp;
  row["pp"] = job.pp;
  row["microbatches"] = job.microbatches;
  row["ranks_per_host"] = o.per_host;
  row["protocol"] = rank0["protocol"].get<int>() == 1 ? "host-aggregated" : "per-rank";
  row["steps"] = steps;
  row["period_ms"] = o.period_ms;
  row["rank0_core"] = o.rank0_core;
  row["steps_analyzed"] = analysed_ms.size();  // lines with a verdict
  row["steps_to_analysis"] = analyzed;          // handed to the analysis (the budget may skip them)
  row["steps_skipped_behind"] = rank0["steps_skipped_behind"];
  row["steps_incomplete"] = rank0["steps_incomplete"];
  // Per analysed step: a step the budget skipped costs the worker next to nothing.
  const double with_verdict = static_cast<double>(analysed_ms.size());
  row["analysis_ms_mean"] = with_verdict > 0 ? rank0["analysis_us_total"].get<double>() / with_verdict / 1e3 : kNaN;
  row["analysis_ms_max"] = rank0["analysis_us_max"].get<double>() / 1e3;
  row["latency_ms_median"] = median(latency_ms);
  row["latency_ms_max"] = latency_ms.empty() ? kNaN : *std::max_element(latency_ms.begin(), latency_ms.end());
  row["verdict_lines"] = latency_ms.size();
  row["analysed_latency_ms_median"] = median(analysed_ms);
  row["analysed_latency_ms_max"] = analysed_ms.empty() ? kNaN : *std::max_element(analysed_ms.begin(), analysed_ms.end());
  row["latency_by_step"] = by_step;
  // Store operations and CPU per step count from the third step on (rank_process.cpp).
  const int counted = rank0["counted_steps"].get<int>();
  row["counted_steps"] = counted;
  row["rank0_store_per_step"] = per_step(rank0["rank0_store"], counted);
  row["store_per_step"] = per_step(store_total, counted);
  row["rank0_cpu_ms_per_step"] = rank0["cpu_s"].get<double>() * 1e3 / counted;
  row["rank0_max_rss_mb"] = rank0["max_rss_kb"].get<double>() / 1024;
  row["store_cpu_ms_per_step"] = store["cpu_s"].get<double>() * 1e3 / steps;  // start-up included
  row["store_max_rss_mb"] = store["max_rss_kb"].get<double>() / 1024;
  const double received = rank0["summaries_received"].get<double>();
  row["summary_bytes_per_rank_step"] = received > 0 ? rank0["bytes_received"].get<double>() / received : kNaN;
  row["store_bytes_per_rank_step"] = row["store_per_step"]["bytes"].get<double>() / world;
  return row;
}

}  // namespace

json bytes_report(const ScaleJob& job, const std::vector<std::vector<std::string>>& summaries) {
  double v2_sum = 0, v1_sum = 0, v2_max = 0, v1_max = 0, ops = 0, n = 0;
  for (const auto& step : summaries) {
    for (const std::string& bytes : step) {
      runtime::StepSummary s;
      std::string error;
      if (!runtime::decode_summary(bytes, &s, &error)) throw std::runtime_error(error);
      const double v1 = static_cast<double>(v1_encoded_size(s));
      v2_sum += static_cast<double>(bytes.size());
      v1_sum += v1;
      v2_max = std::max(v2_max, static_cast<double>(bytes.size()));
      v1_max = std::max(v1_max, v1);
      ops += static_cast<double>(s.ops.size());
      n += 1;
    }
  }
  return {{"ranks", job.dp * job.pp}, {"dp", job.dp}, {"pp", job.pp},
          {"microbatches", job.microbatches}, {"gpu", job.gpu}, {"ops_per_rank_step", ops / n},
          {"v2_bytes_mean", v2_sum / n}, {"v2_bytes_max", v2_max},
          {"v1_bytes_mean", v1_sum / n}, {"v1_bytes_max", v1_max}};
}

int run_job(const ScaleJob& job, const RunOptions& o) {
  const fs::path out(o.out_dir);
  fs::create_directories(out);
  const int world = job.dp * job.pp;
  const auto summaries = make_summaries(job);
  const std::string file = (out / "summaries.bin").string();
  write_summaries(file, summaries);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (o.rank0_core >= cores || (o.rank0_core >= 0 && cores < 2)) {
    throw std::runtime_error("--rank0-core " + std::to_string(o.rank0_core) + " needs a machine with more cores than " +
                             std::to_string(cores));
  }
  const Placement others_place{o.rank0_core, false};
  const int port = free_port();
  const Child store = spawn({"sp_scale_bench", "store", "--port", std::to_string(port), "--result",
                             (out / "store.json").string()}, (out / "store.log").string(), others_place);
  auto ranks = [&](int from, int to, const std::string& name) {
    std::vector<std::string> a = {"sp_scale_bench", "ranks", "--summaries", file,
                                  "--from", std::to_string(from), "--to", std::to_string(to),
                                  "--per-host", std::to_string(o.per_host), "--port", std::to_string(port),
                                  "--period-ms", std::to_string(o.period_ms),
                                  "--protocol", o.protocol, "--result", (out / (name + ".json")).string()};
    if (from == 0) {
      a.push_back("--out-dir");
      a.push_back((out / "report").string());
    }
    return spawn(a, (out / (name + ".log")).string(),
                 from == 0 ? Placement{o.rank0_core, true} : others_place);
  };
  std::vector<Child> children = {ranks(0, 1, "rank0")};
  if (!ready(children[0])) throw std::runtime_error("rank 0's process did not start: see " + o.out_dir);
  const int procs = std::max(1, std::min(o.procs, world - 1));  // rank 0 leads its host
  for (int p = 0; p < procs && world > 1; ++p) {
    const int from = 1 + (world - 1) * p / procs, to = 1 + (world - 1) * (p + 1) / procs;
    children.push_back(ranks(from, to, "ranks" + std::to_string(p)));
  }
  for (size_t i = 1; i < children.size(); ++i) {
    if (!ready(children[i])) throw std::runtime_error("a rank process did not start: see " + o.out_dir);
  }
  // Every rank is connected and has elected its host's leader: step 0 one second from now.
  const int64_t t0 = monotonic_ns() + 1'000'000'000;
  for (const Child& c : children) {
    std::fprintf(c.to, "%lld\n", static_cast<long long>(t0));
    std::fflush(c.to);
  }
  int failures = 0;
  for (const Child& c : children) failures += wait_for(c.pid) != 0;
  kill(store.pid, SIGTERM);
  wait_for(store.pid);
  if (failures != 0) throw std::runtime_error(std::to_string(failures) + " rank process(es) failed: see " + o.out_dir);
  std::vector<json> others;
  for (int p = 0; p < procs && world > 1; ++p) others.push_back(read_json(out / ("ranks" + std::to_string(p) + ".json")));
  json row = summarize(job, o, read_json(out / "rank0.json"), others, read_json(out / "store.json"));
  row["bytes"] = bytes_report(job, summaries);
  std::ofstream(out / "row.json") << row.dump(2) << "\n";
  std::printf("%s\n", row.dump(2).c_str());
  return 0;
}

}  // namespace sp::bench
