#include "rank_process.h"

#include <sys/resource.h>
#include <time.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeline/analysis_worker.h"
#include "host_transport/host_transport.h"
#include "host_transport/host_transport_driver.h"
#include "transport/queued_summary_source.h"
#include "synthetic_summaries.h"
#include "tcp_kv_store.h"
#include "transport/transport.h"

namespace sp::bench {
namespace {

using namespace std::chrono_literals;
using rank_pipeline::KvOp;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_ns(int64_t t) {
  const int64_t now = monotonic_ns();
  if (t > now) std::this_thread::sleep_for(std::chrono::nanoseconds(t - now));
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

constexpr int kOps = static_cast<int>(KvOp::kCount);
// Steps before the per-step counts start (the same number the coordinator divides by).
constexpr int kWarmupSteps = 2;

// Store operations and bytes of a set of clients at one moment.
struct StoreSnapshot {
  std::array<uint64_t, kOps> ops{};
  uint64_t bytes_out = 0, bytes_in = 0;
};

struct Rank {
  std::shared_ptr<rank_pipeline::QueuedSummarySource> source =
      std::make_shared<rank_pipeline::QueuedSummarySource>();
  std::shared_ptr<rank_pipeline::KvClient> store;
  std::shared_ptr<rank_pipeline::TransportCounters> counters =
      std::make_shared<rank_pipeline::TransportCounters>();
  std::shared_ptr<rank_pipeline::StopRequest> stop = std::make_shared<rank_pipeline::StopRequest>();
  // Rank 0, and every rank of the per-rank protocol: its own transport thread, as in a job.
  std::unique_ptr<rank_pipeline::TransportThread> thread;
  // Other ranks of the host-aggregated protocol: the same state machine a rank's thread drives,
  // driven here by one of a few threads (thousands of threads would swamp two cores).
  std::unique_ptr<rank_pipeline::HostTransport> engine;
};

constexpr int kDrivers = 4;  // threads driving the host-aggregated ranks of one process

StoreSnapshot snapshot(const std::vector<std::unique_ptr<Rank>>& ranks, size_t from, size_t to) {
  StoreSnapshot s;
  for (size_t i = from; i < to; ++i) {
    const auto& c = ranks[i]->store->counters();
    for (int k = 0; k < kOps; ++k) s.ops[static_cast<size_t>(k)] += c.ops(static_cast<KvOp>(k));
    s.bytes_out += c.bytes_out.load();
    s.bytes_in += c.bytes_in.load();
  }
  return s;
}

void write_snapshot(std::FILE* f, const char* name, const StoreSnapshot& a, const StoreSnapshot& b) {
  std::fprintf(f, "  \"%s\": {", name);
  for (int k = 0; k < kOps; ++k) {
    std::fprintf(f, "\"%s\": %llu, ", rank_pipeline::kv_op_name(static_cast<KvOp>(k)),
                 static_cast<unsigned long long>(b.ops[static_cast<size_t>(k)] - a.ops[static_cast<size_t>(k)]));
  }
  std::fprintf(f, "\"bytes_out\": %llu, \"bytes_in\": %llu},\n",
               static_cast<unsigned long long>(b.bytes_out - a.bytes_out),
               static_cast<unsigned long long>(b.bytes_in - a.bytes_in));
}

// Rank 0's analysis: the real worker, its lines timestamped.
struct Rank0 {
  std::mutex mutex;
  std::vector<std::pair<int64_t, std::string>> lines;  // (monotonic ns, line)
  std::string failure;
  std::shared_ptr<rank_pipeline::AnalysisWorker> worker;
};

class RankProcess {
 public:
  explicit RankProcess(const RankProcessOptions& o) : o_(o) {}

  int run() {
    int world = 0;
    summaries_ = read_summaries(o_.summaries, o_.from, o_.to, &world);
    world_ = world;
    connect_and_start();
    const int steps = static_cast<int>(summaries_.size());
    std::vector<int64_t> pushed(static_cast<size_t>(steps), 0);
    // Ready: the coordinator starts the clock once every process is (connecting thousands of
    // store clients at once takes a while: some connections wait out a TCP retransmission).
    std::printf("ready\n");
    std::fflush(stdout);
    if (std::scanf("%lld", &t0_) != 1) throw std::runtime_error("no start time on stdin");
    StoreSnapshot before, before0;
    double cpu_before = 0;
    for (int s = 0; s < steps; ++s) {
      sleep_until_ns(t0_ + static_cast<int64_t>(s) * o_.period_ms * 1'000'000);
      if (s == kWarmupSteps) {  // per step: from here on (start-up and the first steps apart)
        before = snapshot(ranks_, 0, ranks_.size());
        before0 = snapshot(ranks_, 0, o_.from == 0 ? 1 : 0);
        cpu_before = cpu_seconds();
      }
      for (size_t i = 0; i < ranks_.size(); ++i) {
        ranks_[i]->source->push({s, static_cast<int32_t>(o_.from + static_cast<int>(i)),
                                 std::move(summaries_[static_cast<size_t>(s)][i])});
      }
      for (auto& d : drivers_) d->wake();
      pushed[static_cast<size_t>(s)] = monotonic_ns();
    }
    wait_for_the_lines(steps);
    const StoreSnapshot after = snapshot(ranks_, 0, ranks_.size());
    const StoreSnapshot after0 = snapshot(ranks_, 0, o_.from == 0 ? 1 : 0);
    const double cpu_after = cpu_seconds();
    sleep_until_ns(end_ns(steps));  // every process stops at the same time, as a job's ranks do
    stop_all();
    write_result(pushed, before, after, before0, after0, cpu_after - cpu_before);
    return 0;
  }

 private:
  void connect_and_start() {
    for (int r = o_.from; r < o_.to; ++r) {
      auto rank = std::make_unique<Rank>();
      char err[512] = {};
      sp_kv_store* kv = sp::pyext::connect_tcp_kv_store(o_.store_host.c_str(), o_.port, false,
                                                       120000, err, sizeof err);
      if (kv == nullptr) throw std::runtime_error(std::string("rank store: ") + err);
      rank->store = std::make_shared<rank_pipeline::KvClient>(kv);
      ranks_.push_back(std::move(rank));
    }
    for (int r = o_.from; r < o_.to; ++r) start_rank(r);
    std::vector<std::vector<rank_pipeline::HostTransport*>> shares(kDrivers);
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i]->engine) shares[i % kDrivers].push_back(ranks_[i]->engine.get());
    }
    for (auto& share : shares) {
      if (!share.empty()) {
        drivers_.push_back(std::make_unique<rank_pipeline::HostTransportDriver>(std::move(share)));
      }
    }
  }

  rank_pipeline::TransportOptions options_for(int r) const {
    rank_pipeline::TransportOptions t;
    t.rank = r;
    t.world_size = world_;
    t.prefix = "bench/";
    t.max_lag = o_.max_lag;
    t.first_step = 0;
    t.step_timeout = 60s;
    t.connect_timeout = 2s;
    t.protocol = o_.protocol == "host"   ? rank_pipeline::TransportProtocol::kHostAggregated
                 : o_.protocol == "rank" ? rank_pipeline::TransportProtocol::kPerRank
                                         : rank_pipeline::TransportProtocol::kAuto;
    t.identity.host = "node-" + std::to_string(r / o_.per_host);
    t.identity.local_rank = r % o_.per_host;
    t.identity.device = r % o_.per_host;
    t.local_world_size = o_.per_host;
    return t;
  }

  void start_rank(int r) {
    Rank& rank = *ranks_[static_cast<size_t>(r - o_.from)];
    rank_pipeline::TransportOptions t = options_for(r);
    t.source = rank.source;
    auto warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    if (r != 0) {
      if (rank_pipeline::speaks_host_protocol(t, *rank.store)) {
        rank.engine = std::make_unique<rank_pipeline::HostTransport>(rank_pipeline::transport_context(
            t, rank.store, rank.counters, rank.stop, [](const std::string&) {}, warn));
      } else {
        rank.thread = rank_pipeline::start_sender(t, rank.store, rank.counters, rank.stop,
                                                  [](const std::string&) {}, warn);
      }
      return;
    }
    rank_pipeline::AnalysisOptions a;
    a.settings.world_size = world_;
    a.max_lag = o_.max_lag;
    a.settings.out_dir = o_.out_dir;
    a.settings.recap_interval = 0;
    Rank0* r0 = &rank0_;
    r0->worker = std::make_shared<rank_pipeline::AnalysisWorker>(
        a,
        [r0](const std::string& line) {
          std::lock_guard<std::mutex> lock(r0->mutex);
          r0->lines.emplace_back(monotonic_ns(), line);
        },
        [r0](const std::string& why) {
          std::lock_guard<std::mutex> lock(r0->mutex);
          r0->failure = why;
        });
    auto worker = r0->worker;
    rank.thread = rank_pipeline::start_collector(
        t, rank.store, rank.counters,
        [worker](rank_pipeline::StepBatch&& b) { worker->submit(std::move(b)); }, [] {}, warn,
        rank.stop, [](const std::string&) {});
  }

  int64_t end_ns(int steps) const {
    return t0_ + (static_cast<int64_t>(steps) * o_.period_ms + o_.tail_ms) * 1'000'000;
  }

  // Rank 0 waits until every step has its line (or the tail is over); the others the tail.
  void wait_for_the_lines(int steps) {
    const int64_t end = end_ns(steps);
    while (monotonic_ns() < end) {
      if (o_.from == 0) {
        std::lock_guard<std::mutex> lock(rank0_.mutex);
        int per_step = 0;
        for (const auto& [t, line] : rank0_.lines) per_step += line.rfind("straggler_probe step=", 0) == 0;
        if (per_step >= steps) return;
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  void stop_all() {
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    if (rank0_.worker) rank0_.worker->set_draining();
    for (auto& r : ranks_) r->source->close();
    for (auto& r : ranks_) {
      if (r->thread) r->thread->request_stop(deadline);
    }
    for (auto& d : drivers_) d->request_stop(deadline);
    for (auto& r : ranks_) {
      if (r->thread) r->thread->join(10s);
    }
    for (auto& d : drivers_) d->join();
    if (rank0_.worker) rank0_.worker->finish(600s);
  }

  void write_result(const std::vector<int64_t>& pushed, const StoreSnapshot& before,
                    const StoreSnapshot& after, const StoreSnapshot& before0,
                    const StoreSnapshot& after0, double cpu) {
    std::FILE* f = std::fopen(o_.result.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + o_.result);
    std::fprintf(f, "{\n  \"from\": %d, \"to\": %d, \"world\": %d, \"counted_steps\": %d, \"cpu_s\": %.6f,"
                 " \"max_rss_kb\": %ld,\n", o_.from, o_.to, world_,
                 static_cast<int>(pushed.size()) - kWarmupSteps, cpu, max_rss_kb());
    write_snapshot(f, "store", before, after);
    if (o_.from == 0) write_snapshot(f, "rank0_store", before0, after0);
    std::fprintf(f, "  \"pushed_ns\": [");
    for (size_t i = 0; i < pushed.size(); ++i) std::fprintf(f, "%s%lld", i ? ", " : "", static_cast<long long>(pushed[i]));
    std::fprintf(f, "]");
    if (o_.from == 0) write_rank0(f);
    std::fprintf(f, "\n}\n");
    std::fclose(f);
  }

  void write_rank0(std::FILE* f) {
    std::lock_guard<std::mutex> lock(rank0_.mutex);
    const auto& c = rank0_.worker->counters();
    const auto& t = *ranks_[0]->counters;
    std::fprintf(f, ",\n  \"analysis_us_total\": %llu, \"analysis_us_max\": %llu, \"steps_analyzed\": %llu,"
                 " \"steps_skipped_behind\": %llu, \"steps_complete\": %llu, \"steps_incomplete\": %llu,"
                 " \"bytes_received\": %llu, \"summaries_received\": %llu, \"protocol\": %d,\n",
                 static_cast<unsigned long long>(c.analysis_us_total.load()),
                 static_cast<unsigned long long>(c.analysis_us_max.load()),
                 static_cast<unsigned long long>(c.steps_analyzed.load()),
                 static_cast<unsigned long long>(c.steps_skipped_behind.load()),
                 static_cast<unsigned long long>(t.steps_complete.load()),
                 static_cast<unsigned long long>(t.steps_incomplete.load()),
                 static_cast<unsigned long long>(t.bytes_received.load()),
                 static_cast<unsigned long long>(t.summaries_received.load()), t.protocol.load());
    std::fprintf(f, "  \"failure\": \"%s\",\n  \"lines\": [", rank0_.failure.empty() ? "" : "yes");
    bool first = true;
    for (const auto& [ns, line] : rank0_.lines) {
      std::string escaped;
      for (char ch : line) {
        if (ch == '"' || ch == '\\') escaped += '\\';
        escaped += (ch == '\n') ? ' ' : ch;
      }
      std::fprintf(f, "%s\n    [%lld, \"%s\"]", first ? "" : ",", static_cast<long long>(ns), escaped.c_str());
      first = false;
    }
    std::fprintf(f, "]");
  }

  RankProcessOptions o_;
  long long t0_ = 0;  // CLOCK_MONOTONIC ns of step 0, from the coordinator
  int world_ = 0;
  std::vector<std::vector<std::string>> summaries_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<std::unique_ptr<rank_pipeline::HostTransportDriver>> drivers_;
  Rank0 rank0_;
};

}  // namespace

int run_rank_process(const RankProcessOptions& o) { return RankProcess(o).run(); }

}  // namespace sp::bench
