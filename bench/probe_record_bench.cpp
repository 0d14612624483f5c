// Cost of recording, as a training thread pays it, through libstraggler_probe.so (the deployed
// library: PLT call, TLS lookup, ring push). One iteration is one recorded event, so the time per
// iteration is the cost per event; "dropped" shows whether the ring kept up (drops are cheaper
// than pushes, so a run with many drops under-states the cost).
//
//   probe_record_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdio>

#include "capture/spsc_ring.h"
#include "straggler_probe/probe.h"

namespace {

sp_event sample_event() {
  const uint64_t t = sp_now_ns();
  sp_event e{};
  e.start_ns = t;
  e.end_ns = t + 1000;
  e.kind = SP_OP_COLLECTIVE;
  e.coll = SP_COLL_ALL_REDUCE;
  e.group_id = 42;
  e.microbatch = -1;
  e.peer = -1;
  return e;
}

void report(benchmark::State& state, const sp_stats& before) {
  sp_stats after{};
  sp_get_stats(&after);
  const double events = static_cast<double>(after.events_recorded + after.events_dropped -
                                            before.events_recorded - before.events_dropped);
  state.counters["dropped"] = benchmark::Counter(
      events > 0 ? static_cast<double>(after.events_dropped - before.events_dropped) / events : 0,
      benchmark::Counter::kAvgThreads);
}

// sp_record of a complete event (collectives, CUDA-event regions, CUPTI records).
void BM_Record(benchmark::State& state) {
  sp_stats before{};
  if (state.thread_index() == 0) sp_get_stats(&before);
  sp_event e = sample_event();
  for (auto _ : state) {
    e.seq++;
    benchmark::DoNotOptimize(sp_record(&e));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) report(state, before);
}
BENCHMARK(BM_Record)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// A CPU-timed region: begin + end (two clock reads) making one event.
void BM_RegionBeginEnd(benchmark::State& state) {
  sp_stats before{};
  if (state.thread_index() == 0) sp_get_stats(&before);
  const uint32_t name = sp_intern("forward");
  for (auto _ : state) {
    const uint64_t token = sp_region_begin(SP_OP_FORWARD, 0, name);
    benchmark::DoNotOptimize(sp_region_end(token));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) report(state, before);
}
BENCHMARK(BM_RegionBeginEnd)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// References: the clock read alone, and the bare ring push without the C ABI around it.
void BM_ClockRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(sp_now_ns());
}
BENCHMARK(BM_ClockRead);

void BM_RawRingPush(benchmark::State& state) {
  auto ring = sp::runtime::SpscRing<sp_event>::create(1024);
  if (!ring) {
    state.SkipWithError("cannot allocate the ring");
    return;
  }
  const sp_event e = sample_event();
  uint64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ring->try_push(e));
    if ((++n & 511) == 0) ring->discard_all();  // stand-in for the consumer
  }
}
BENCHMARK(BM_RawRingPush);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  sp_config cfg;
  sp_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  cfg.local_rank = 0;
  cfg.ring_capacity = 1u << 20;  // the consumer drains every ms: large enough not to drop
  cfg.drain_interval_ms = 1;
  cfg.max_events_per_step = 1024;  // no marks here: the consumer discards instead of hoarding
  if (sp_init(&cfg) != SP_OK) {
    std::fprintf(stderr, "sp_init failed: %s\n", sp_last_warning());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sp_shutdown();
  return 0;
}
