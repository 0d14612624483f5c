// Pure pieces of nccl_hooks: group folding, communicator identity, launcher environment, step
// detection and its stand-down rule, and the CUDA-event stream timer against a simulated GPU
// clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm_registry.h"
#include "index_free_list.h"
#include "interposer/cuda_runtime_api.h"
#include "interposer/nccl_op.h"
#include "interposer/stream_timer.h"
#include "nccl_op_names.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/graph_capture.h"
#include "straggler_probe/preload/own_step_marks.h"
#include "straggler_probe/preload/rank_env.h"
#include "straggler_probe/preload/step_detector.h"

namespace sp::nccl {
namespace {

// ---- names --------------------------------------------------------------------------------------

TEST(NcclNames, SizesAndTypes) {
  EXPECT_EQ(datatype_size(9), 2u);   // bfloat16
  EXPECT_EQ(datatype_size(4), 8u);   // int64
  EXPECT_EQ(datatype_size(42), 0u);
  EXPECT_EQ(datatype_size_by_name("ncclFloat8e4m3"), 1u);
  EXPECT_EQ(datatype_size_by_name("float"), 0u);
  EXPECT_EQ(coll_type_by_name("ReduceScatter"), SP_COLL_REDUCE_SCATTER);
  EXPECT_EQ(coll_type_by_name("SendRecv"), SP_COLL_NONE);
  EXPECT_EQ(coll_type_by_func_id(4), SP_COLL_ALL_REDUCE);
  EXPECT_EQ(op_kind_of(SP_COLL_RECV), SP_OP_RECV);
}

// ---- communicators and groups -------------------------------------------------------------------

TEST(CommRegistry, AddFindRemoveReuse) {
  CommRegistry reg;
  int a = 0, b = 0;
  CommInfo* ca = reg.add(&a, 11, 0, 4, true);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(reg.find(&a), ca);
  EXPECT_EQ(reg.find(&b), nullptr);
  EXPECT_EQ(ca->next_coll_seq(), 0u);
  EXPECT_EQ(ca->next_coll_seq(), 1u);
  EXPECT_EQ(ca->next_p2p_seq(true, 2), 0u);
  EXPECT_EQ(ca->next_p2p_seq(true, 2), 1u);
  EXPECT_EQ(ca->next_p2p_seq(false, 2), 0u);
  EXPECT_EQ(ca->next_p2p_seq(true, 9), 0u) << "a peer outside the known size still counts";
  reg.remove(&a);
  EXPECT_EQ(reg.find(&a), nullptr);
  CommInfo* again = reg.add(&a, 12, 1, 2, true);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->next_coll_seq(), 0u) << "an address reused by NCCL is a new communicator";
  EXPECT_EQ(reg.size(), 1u);
}

TEST(CommRegistry, IdentityIsTheSameOnEveryRank) {
  char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<char>(i * 37);
  const uint64_t h = CommRegistry::id_from_unique_id(id, 128);
  EXPECT_EQ(h, CommRegistry::id_from_unique_id(id, 128));
  id[5] ^= 1;
  EXPECT_NE(h, CommRegistry::id_from_unique_id(id, 128));
  EXPECT_EQ(CommRegistry::child_id(h, 2, 0), CommRegistry::child_id(h, 2, 0));
  EXPECT_NE(CommRegistry::child_id(h, 2, 0), CommRegistry::child_id(h, 3, 0));
  EXPECT_NE(CommRegistry::child_id(h, 2, 0), CommRegistry::child_id(h, 2, 1));
}

TEST(GroupSummary, FoldsCoalescedCollectivesIntoOne) {
  CommRegistry reg;
  int c = 0;
  CommInfo* comm = reg.add(&c, 5, 0, 4, true);
  comm->next_coll_seq();  // one collective before the group
  GroupSummary g;
  for (int i = 0; i < 3; ++i) g.add(NcclOp{SP_COLL_ALL_REDUCE, comm, 100, -1, -1, nullptr});
  const OpIdentity id = g.finish();
  EXPECT_EQ(id.kind, SP_OP_COLLECTIVE);
  EXPECT_EQ(id.coll, SP_COLL_ALL_REDUCE);
  EXPECT_EQ(id.bytes, 300u);
  EXPECT_EQ(id.seq, 1u);
  EXPECT_EQ(id.op_count, 3u);
  EXPECT_TRUE(id.folded_group);
  EXPECT_EQ(comm->next_coll_seq(), 2u) << "the group took one sequence number";
}

TEST(GroupSummary, MixedGroupsAreOneGroupOperation) {
  CommRegistry reg;
  int c1 = 0, c2 = 0;
  CommInfo* a = reg.add(&c1, 5, 0, 4, true);
  CommInfo* b = reg.add(&c2, 6, 0, 4, true);
  GroupSummary g;
  g.add(NcclOp{SP_COLL_SEND, a, 10, 1, -1, nullptr});
  g.add(NcclOp{SP_COLL_RECV, a, 20, 1, -1, nullptr});
  OpIdentity id = g.finish();
  EXPECT_EQ(id.kind, SP_OP_COLLECTIVE);
  EXPECT_EQ(id.coll, SP_COLL_NONE);
  EXPECT_EQ(id.peer, 1);
  EXPECT_EQ(id.seq, 0u);
  EXPECT_EQ(id.group_size, 0) << "membership: the ranks that used it";
  EXPECT_NE(id.group_id, 0u);
  EXPECT_NE(id.group_id, a->group_id) << "its own (group, seq) space, apart from collectives";

  GroupSummary g2;
  g2.add(NcclOp{SP_COLL_ALL_REDUCE, a, 1, -1, -1, nullptr});
  g2.add(NcclOp{SP_COLL_ALL_REDUCE, b, 1, -1, -1, nullptr});
  id = g2.finish();
  EXPECT_EQ(id.coll, SP_COLL_NONE);
  EXPECT_EQ(id.group_size, 0) << "several communicators: no single membership";
  EXPECT_EQ(id.seq, 1u) << "the group counter of the first communicator";
}

TEST(GroupSummary, SingleOperationIsItself) {
  CommRegistry reg;
  int c = 0;
  CommInfo* comm = reg.add(&c, 5, 0, 4, true);
  GroupSummary g;
  g.add(NcclOp{SP_COLL_SEND, comm, 64, 3, -1, nullptr});
  const OpIdentity id = g.finish();
  EXPECT_EQ(id.kind, SP_OP_SEND);
  EXPECT_EQ(id.peer, 3);
  EXPECT_FALSE(id.folded_group);
}

// ---- launcher environment -----------------------------------------------------------------------

std::map<std::string, std::string>* g_env = nullptr;
const char* fake_getenv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

preload::RankEnv env_of(std::map<std::string, std::string> vars) {
  g_env = &vars;
  preload::RankEnv r = preload::read_rank_env(&fake_getenv);
  g_env = nullptr;
  return r;
}

TEST(RankEnv, TorchrunAndFallbacks) {
  preload::RankEnv r = env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}});
  EXPECT_TRUE(r.is_rank);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  r = env_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_TRUE(r.is_rank);
  EXPECT_EQ(r.source, "OMPI_COMM_WORLD_*");
  r = env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  EXPECT_TRUE(r.is_rank);
}

TEST(RankEnv, NotARankAndMalformedValues) {
  EXPECT_FALSE(env_of({}).is_rank);
  EXPECT_FALSE(env_of({{"RANK", "0"}}).is_rank) << "torchrun's agent has no WORLD_SIZE rank pair";
  preload::RankEnv r = env_of({{"RANK", "two"}, {"WORLD_SIZE", "4"}});
  EXPECT_FALSE(r.is_rank);
  EXPECT_NE(r.error.find("RANK='two'"), std::string::npos);
  r = env_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_FALSE(r.is_rank);
  EXPECT_NE(r.error.find("not below"), std::string::npos);
}

// ---- step detection -----------------------------------------------------------------------------

TEST(StepMarker, Parsing) {
  preload::StepMarker m;
  std::string err;
  ASSERT_TRUE(preload::parse_step_marker(nullptr, &m, &err));
  EXPECT_EQ(m.mode, preload::StepMarker::Mode::kAuto);
  ASSERT_TRUE(preload::parse_step_marker("every:12", &m, &err));
  EXPECT_EQ(m.every, 12u);
  ASSERT_TRUE(preload::parse_step_marker("AllReduce:4096", &m, &err));
  EXPECT_EQ(m.op, SP_COLL_ALL_REDUCE);
  EXPECT_EQ(m.bytes, 4096u);
  ASSERT_TRUE(preload::parse_step_marker("off", &m, &err));
  EXPECT_FALSE(preload::parse_step_marker("every:0", &m, &err));
  EXPECT_NE(err.find("every:N"), std::string::npos);
  EXPECT_FALSE(preload::parse_step_marker("AllReduce:big", &m, &err));
  EXPECT_FALSE(preload::parse_step_marker("Allreduce", &m, &err));
  EXPECT_NE(err.find("STRAGGLER_PROBE_STEP_MARKER='Allreduce'"), std::string::npos);
}

// A DDP-like step: a broadcast at the start, then 4 gradient all-reduces; long gap (forward +
// data) before the broadcast.
struct Op {
  sp_coll_type type;
  uint64_t bytes;
  uint64_t gap;
};
const std::vector<Op> kStep = {{SP_COLL_BROADCAST, 64, 50'000'000},
                               {SP_COLL_ALL_REDUCE, 1 << 20, 2'000'000},
                               {SP_COLL_ALL_REDUCE, 1 << 20, 2'000'000},
                               {SP_COLL_ALL_REDUCE, 1 << 20, 2'000'000},
                               {SP_COLL_ALL_REDUCE, 512, 1'000'000}};

TEST(StepDetector, FindsThePeriodAndThePhaseFromGaps) {
  preload::StepDetector d;
  uint64_t t = 1'000'000'000;
  std::vector<size_t> boundaries_at;
  size_t n = 0;
  // A first, different step (DDP rebuilds its buckets after step 1).
  for (int i = 0; i < 7; ++i) {
    t += 1000;
    d.on_op(SP_COLL_ALL_REDUCE, 1, 999, t, t + 1000);
    t += 1000;
  }
  for (int step = 0; step < 12; ++step) {
    for (const Op& op : kStep) {
      t += op.gap;
      const uint64_t start = t;
      t += 100'000;
      if (d.on_op(op.type, 1, op.bytes, start, t) == preload::StepDetector::Boundary::kBefore) {
        boundaries_at.push_back(n % kStep.size());
      }
      ++n;
    }
  }
  EXPECT_EQ(d.period(), kStep.size());
  ASSERT_GE(boundaries_at.size(), 6u) << "found after a few repeats";
  for (size_t pos : boundaries_at) EXPECT_EQ(pos, 0u) << "a step opens with the broadcast";
}

TEST(StepDetector, LosesAndRefindsThePeriodWhenThePatternChanges) {
  preload::StepDetector d;
  uint64_t t = 0;
  for (int i = 0; i < 40; ++i, t += 20) d.on_op(SP_COLL_ALL_REDUCE, 1, (i % 2) ? 8 : 16, t, t + 10);
  EXPECT_EQ(d.period(), 2u);
  for (int i = 0; i < 4; ++i, t += 20) d.on_op(SP_COLL_ALL_GATHER, 1, 5, t, t + 10);
  EXPECT_EQ(d.period(), 0u);
}

TEST(StepDetector, ExplicitMarkers) {
  preload::StepMarker every;
  every.mode = preload::StepMarker::Mode::kEveryN;
  every.every = 3;
  preload::StepDetector d(every);
  int after = 0;
  for (int i = 0; i < 9; ++i) {
    after += d.on_op(SP_COLL_ALL_REDUCE, 1, 4, 0, 0) == preload::StepDetector::Boundary::kAfter;
  }
  EXPECT_EQ(after, 3);

  preload::StepMarker op;
  op.mode = preload::StepMarker::Mode::kOp;
  op.op = SP_COLL_ALL_GATHER;
  op.bytes = 128;
  preload::StepDetector e(op);
  EXPECT_EQ(e.on_op(SP_COLL_ALL_GATHER, 1, 64, 0, 0), preload::StepDetector::Boundary::kNone);
  EXPECT_EQ(e.on_op(SP_COLL_ALL_REDUCE, 1, 128, 0, 0), preload::StepDetector::Boundary::kNone);
  EXPECT_EQ(e.on_op(SP_COLL_ALL_GATHER, 1, 128, 0, 0), preload::StepDetector::Boundary::kAfter);

  preload::StepMarker off;
  off.mode = preload::StepMarker::Mode::kOff;
  preload::StepDetector f(off);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(f.on_op(SP_COLL_ALL_REDUCE, 1, 4, 0, 0), preload::StepDetector::Boundary::kNone);
  }
}

// A stand-in runtime for the step marks: the last marked label, as sp_mark_step keeps it.
int64_t g_last_marked = -1;
int64_t sim_last_marked() { return g_last_marked; }
int sim_mark(int64_t step) {
  g_last_marked = step;
  return SP_OK;
}

TEST(OwnStepMarks, MarksWhileAloneAndStandsDownForGoodAtAForeignMark) {
  g_last_marked = -1;
  gpu::set_runtime_step_hooks({&sim_last_marked, &sim_mark});
  preload::OwnStepMarks own;
  bool now = false;
  for (int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(own.sole_producer(gpu::current_step_label(), &now)) << step;
    EXPECT_TRUE(own.mark(gpu::current_step_label()));
  }
  EXPECT_FALSE(now);
  EXPECT_TRUE(own.sole_producer(-1, &now)) << "no runtime shows no foreign mark";
  sim_mark(gpu::current_step_label());  // the application marks step 3 itself
  EXPECT_FALSE(own.sole_producer(gpu::current_step_label(), &now));
  EXPECT_TRUE(now) << "told once, to say so once";
  now = false;
  EXPECT_FALSE(own.sole_producer(gpu::current_step_label(), &now));
  EXPECT_FALSE(now);
  gpu::set_runtime_step_hooks({});
}

// ---- stream timer against a simulated GPU -------------------------------------------------------

// A GPU whose clock is the CPU clock plus a lag: an event "executes" `lag` after it is recorded.
struct SimGpu {
  uint64_t lag_ns = 200'000;
  bool capturing = false;
  std::map<void*, uint64_t> event_time;  // GPU time (ns) when recorded
  int next = 1;
  int device = 0;                        // the device current when the timer starts
  std::atomic<int> queries_on_other_device{0};
  std::atomic<int> queries{0};
  std::atomic<int> relaxed_mode_threads{0};
};
thread_local int t_sim_device = 0;
thread_local int t_sim_capture_mode = 0;
SimGpu* g_gpu = nullptr;

int sim_create(void** e, unsigned) {
  *e = reinterpret_cast<void*>(static_cast<uintptr_t>(g_gpu->next++));
  return 0;
}
int sim_record(void* e, void*) {
  g_gpu->event_time[e] = gpu::probe_now_ns() + g_gpu->lag_ns;
  return 0;
}
int sim_query(void* e) {
  g_gpu->queries.fetch_add(1);
  if (t_sim_device != g_gpu->device) g_gpu->queries_on_other_device.fetch_add(1);
  return g_gpu->event_time.at(e) <= gpu::probe_now_ns() ? kCudaSuccess : kCudaErrorNotReady;
}
int sim_sync(void* e) {
  // The anchor stream is idle: its events execute at once.
  g_gpu->event_time[e] -= g_gpu->lag_ns;
  return 0;
}
int sim_elapsed(float* ms, void* a, void* b) {
  const auto d = static_cast<double>(static_cast<int64_t>(g_gpu->event_time.at(b) -
                                                          g_gpu->event_time.at(a)));
  *ms = static_cast<float>(d / 1e6);
  return 0;
}
int sim_destroy(void*) { return 0; }
int sim_capturing(void*, int* status) {
  *status = g_gpu->capturing ? 1 : 0;
  return 0;
}
int sim_stream(void** s, unsigned) {
  *s = reinterpret_cast<void*>(uintptr_t{0xabc});
  return 0;
}
int sim_get_device(int* d) {
  *d = t_sim_device;
  return 0;
}
int sim_set_device(int d) {
  t_sim_device = d;
  return 0;
}
int sim_exchange_capture_mode(int* mode) {
  std::swap(*mode, t_sim_capture_mode);
  if (t_sim_capture_mode == kCudaStreamCaptureModeRelaxed) g_gpu->relaxed_mode_threads.fetch_add(1);
  return 0;
}

CudaRt sim_rt() {
  CudaRt rt;
  rt.event_create_with_flags = sim_create;
  rt.event_record = sim_record;
  rt.event_query = sim_query;
  rt.event_synchronize = sim_sync;
  rt.event_elapsed_time = sim_elapsed;
  rt.event_destroy = sim_destroy;
  rt.stream_is_capturing = sim_capturing;
  rt.stream_create_with_flags = sim_stream;
  rt.get_device = sim_get_device;
  rt.set_device = sim_set_device;
  rt.thread_exchange_capture_mode = sim_exchange_capture_mode;
  return rt;
}

std::vector<sp_event> g_timed;
int capture(const sp_event* ev, void*) {
  g_timed.push_back(*ev);
  return SP_OK;
}

TEST(StreamTimer, TimesOperationsOnTheGpuClockWithoutWaiting) {
  SimGpu gpu;
  g_gpu = &gpu;
  g_timed.clear();
  gpu::set_event_sink(&capture, nullptr);
  StreamTimerOptions o;
  o.poll_ms = 0;  // the test polls
  StreamTimer timer(sim_rt(), o);
  ASSERT_TRUE(timer.start());
  void* stream = reinterpret_cast<void*>(uintptr_t{0x77});
  EXPECT_FALSE(timer.capturing(stream));

  const uint64_t cpu_before = gpu::probe_now_ns();
  StreamTimer::Pending* p = timer.begin(stream);
  ASSERT_NE(p, nullptr);
  sp_event ev = gpu::blank_event();
  ev.kind = SP_OP_COLLECTIVE;
  ev.bytes = 123;
  ev.start_ns = 1;  // CPU times: replaced
  ev.end_ns = 2;
  timer.end(p, stream, ev);
  EXPECT_EQ(timer.poll(), 0u) << "the GPU has not run it yet";
  while (timer.poll() == 0) {
  }
  gpu::set_event_sink(nullptr, nullptr);
  ASSERT_EQ(g_timed.size(), 1u);
  const sp_event& t = g_timed[0];
  EXPECT_EQ(t.time_source, static_cast<uint32_t>(SP_TIME_CUDA_EVENT));
  EXPECT_EQ(t.bytes, 123u);
  // GPU start ≈ CPU record time + lag, on the probe clock within the anchor's precision.
  EXPECT_GE(static_cast<double>(t.start_ns),
            static_cast<double>(cpu_before + gpu.lag_ns) - 50'000.0);
  EXPECT_LE(t.start_ns, gpu::probe_now_ns());
  EXPECT_EQ(timer.stats().timed, 1u);

  gpu.capturing = true;
  EXPECT_TRUE(timer.capturing(stream)) << "graph capture detected: do not time";
  timer.stop();
  g_gpu = nullptr;
}

TEST(StreamTimer, BoundedInFlightFallsBackToHostTimes) {
  SimGpu gpu;
  gpu.lag_ns = 3'600'000'000'000ull;  // never completes during the test
  g_gpu = &gpu;
  StreamTimerOptions o;
  o.poll_ms = 0;
  o.max_in_flight = 2;
  StreamTimer timer(sim_rt(), o);
  ASSERT_TRUE(timer.start());
  sp_event ev = gpu::blank_event();
  for (int i = 0; i < 2; ++i) {
    StreamTimer::Pending* p = timer.begin(nullptr);
    ASSERT_NE(p, nullptr);
    timer.end(p, nullptr, ev);
  }
  EXPECT_EQ(timer.begin(nullptr), nullptr);
  EXPECT_EQ(timer.stats().untimed_full, 1u);
  timer.stop();
  g_gpu = nullptr;
}

// Issue 11: while a thread captures a CUDA graph in the global mode, another thread's event
// query invalidates the capture: the poller queries nothing until the capture ends.
TEST(StreamTimer, QueriesNothingWhileAGraphIsBeingCaptured) {
  SimGpu gpu;
  gpu.lag_ns = 0;
  g_gpu = &gpu;
  g_timed.clear();
  gpu::reset_graph_capture_for_tests();
  gpu::set_event_sink(&capture, nullptr);
  StreamTimerOptions o;
  o.poll_ms = 0;
  StreamTimer timer(sim_rt(), o);
  ASSERT_TRUE(timer.start());
  sp_event ev = gpu::blank_event();
  timer.end(timer.begin(nullptr), nullptr, ev);
  gpu::graph_capture_begin();
  const int before = gpu.queries.load();
  EXPECT_EQ(timer.poll(), 0u);
  EXPECT_EQ(gpu.queries.load(), before) << "no query during the capture";
  EXPECT_EQ(timer.stats().capture_pauses, 1u);
  gpu::graph_capture_end();
  EXPECT_EQ(timer.poll(), 1u) << "resolved once the capture ended";
  EXPECT_EQ(g_timed.size(), 1u);
  gpu::set_event_sink(nullptr, nullptr);
  timer.stop();
  g_gpu = nullptr;
}

// Issue 11: the poller thread works on the rank's device (the one current when the timer
// started, e.g. LOCAL_RANK 3), not device 0, and in the relaxed capture mode.
TEST(StreamTimer, ThePollerQueriesOnTheRanksDeviceInRelaxedCaptureMode) {
  SimGpu gpu;
  gpu.lag_ns = 0;
  gpu.device = 3;
  g_gpu = &gpu;
  g_timed.clear();
  gpu::set_event_sink(&capture, nullptr);
  t_sim_device = 3;  // the rank's device on the thread that starts the timer
  StreamTimerOptions o;
  o.poll_ms = 1;
  StreamTimer timer(sim_rt(), o);
  ASSERT_TRUE(timer.start());
  sp_event ev = gpu::blank_event();
  timer.end(timer.begin(nullptr), nullptr, ev);
  for (int i = 0; i < 2000 && timer.stats().timed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  timer.stop();
  gpu::set_event_sink(nullptr, nullptr);
  t_sim_device = 0;
  EXPECT_EQ(timer.stats().timed, 1u);
  EXPECT_GT(gpu.queries.load(), 0);
  EXPECT_EQ(gpu.queries_on_other_device.load(), 0) << "every query on device 3";
  EXPECT_EQ(gpu.relaxed_mode_threads.load(), 1) << "the poller thread is in relaxed mode";
  g_gpu = nullptr;
}

// Issue 11: timing events on communication streams break NCCL/GEMM overlap when the GPU has one
// hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1, Megatron's setting): never there.
TEST(StreamTimer, NoTimingEventsOnCommunicationStreamsWithOneConnection) {
  EXPECT_EQ(why_no_stream_timing(nullptr, nullptr), nullptr);
  EXPECT_EQ(why_no_stream_timing("cuda", "8"), nullptr);
  const char* why = why_no_stream_timing(nullptr, "1");
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("NCCL profiler plugin"), std::string::npos) << why;
  ASSERT_NE(why_no_stream_timing("cpu", nullptr), nullptr);
  ASSERT_NE(why_no_stream_timing("host", nullptr), nullptr) << "the old name, read for one release";
}

// The lock-free slot pool of the plugin and the stream timer: first freed, first reused (a handle
// NCCL may still name stays unused as long as possible), and no slot handed out twice while
// threads take and give concurrently.
TEST(IndexFreeList, FirstFreedFirstReusedAndNoSlotTwiceUnderContention) {
  IndexFreeList fifo(4);
  EXPECT_EQ(fifo.take(), 0u);
  EXPECT_EQ(fifo.take(), 1u);
  fifo.give(0);
  EXPECT_EQ(fifo.take(), 2u) << "the freed slot goes to the back";
  EXPECT_EQ(fifo.take(), 3u);
  EXPECT_EQ(fifo.take(), 0u);
  EXPECT_EQ(fifo.take(), IndexFreeList::kNone);

  constexpr uint32_t kSlots = 64;
  IndexFreeList pool(kSlots);
  std::vector<std::atomic<int>> holders(kSlots);
  std::atomic<int> doubles{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        const uint32_t slot = pool.take();
        if (slot == IndexFreeList::kNone) continue;
        if (holders[slot].fetch_add(1) != 0) doubles.fetch_add(1);
        holders[slot].fetch_sub(1);
        pool.give(slot);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(doubles.load(), 0);
  uint32_t free_after = 0;
  while (pool.take() != IndexFreeList::kNone) ++free_after;
  EXPECT_EQ(free_after, kSlots) << "every slot came back";
}

}  // namespace
}  // namespace sp::nccl
