// The profiler plugin's operations with and without channels, through the exported v5 (NCCL 2.28)
// and v6 (NCCL 2.29 / 2.30) tables: an operation that gets no KernelCh events (a send / receive
// to the rank itself, a one-rank communicator) completes at its own stop with CPU times; one
// with channels at its last channel's stop with GPU times; one whose channels never start is
// swept after the time bound (a fake clock, so no test sleeps); one with a channel in flight is
// never swept. The counters are read through the C ABI as well.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <type_traits>
#include <vector>

#include "fake_runtime.h"
#include "interposer/interposer_recorder.h"
#include "plugin/abi/nccl_profiler_api.h"
#include "plugin/core/plugin_op_state.h"
#include "plugin/core/profiler_plugin_core.h"
#include "straggler_probe/event_sink.h"
#include "straggler_probe/gpu/nccl_c_api.h"

namespace sp::nccl {
namespace {

constexpr uint64_t kSecond = 1000ull * 1000 * 1000;
constexpr uint32_t kHost = SP_TIME_CPU;
constexpr uint32_t kGpu = SP_TIME_NCCL;

struct V5 {
  static api::ProfilerV5& table() { return ncclProfiler_v5; }
};
struct V6 {
  static api::ProfilerV6& table() { return ncclProfiler_v6; }
};

// Drives one version's table as NCCL does.
template <typename V>
struct Nccl {
  using Descr = typename std::remove_reference_t<decltype(V::table())>::Descr;
  using StateArgs = typename std::remove_reference_t<decltype(V::table())>::StateArgs;

  static void* init(uint64_t hash, int nranks, int rank) {
    void* ctx = nullptr;
    int mask = 0;
    EXPECT_EQ(V::table().init(&ctx, hash, &mask, "c", 1, nranks, rank, nullptr), 0);
    return ctx;
  }
  static void* op(void* ctx, uint64_t type, const char* func, int peer, uint8_t channels,
                  int rank) {
    Descr d{};
    d.type = type;
    d.rank = rank;
    if (type == kProfileColl) {
      d.coll.func = func;
      d.coll.count = 64;
      d.coll.datatype = "ncclFloat32";
      d.coll.nChannels = channels;
    } else {
      d.p2p.func = func;
      d.p2p.count = 64;
      d.p2p.datatype = "ncclFloat32";
      d.p2p.peer = peer;
      d.p2p.nChannels = channels;
    }
    void* h = nullptr;
    EXPECT_EQ(V::table().startEvent(ctx, &h, &d), 0);
    return h;
  }
  static int stop(void* h) { return V::table().stopEvent(h); }
  static void* channel(void* ctx, void* parent, uint8_t id, uint64_t gpu_start) {
    Descr k{};
    k.type = kProfileKernelCh;
    k.parentObj = parent;
    k.kernelCh.channelId = id;
    k.kernelCh.pTimer = gpu_start;
    void* h = nullptr;
    EXPECT_EQ(V::table().startEvent(ctx, &h, &k), 0);
    return h;
  }
  static void channel_stop(void* ch, uint64_t gpu_stop) {
    StateArgs a{};
    a.kernelCh.pTimer = gpu_stop;
    EXPECT_EQ(V::table().recordEventState(ch, kStateKernelChStop, &a), 0);
    EXPECT_EQ(V::table().stopEvent(ch), 0);
  }
  static void finalize(void* ctx) { EXPECT_EQ(V::table().finalize(ctx), 0); }
};

std::atomic<uint64_t> g_fake_now{0};
uint64_t fake_now() { return g_fake_now.load(); }

sp_nccl_stats c_stats() {
  sp_nccl_stats s{};
  s.struct_size = sizeof(s);
  EXPECT_EQ(sp_nccl_get_stats(&s), SP_OK);
  return s;
}

template <typename V>
class PluginChannels : public ::testing::Test {
 protected:
  using Driver = Nccl<V>;
  void SetUp() override {
    setenv("RANK", "0", 0);  // the plugin records only in a rank (read once per process)
    setenv("WORLD_SIZE", "2", 0);
    plugin_reset_for_tests();
    sp_test_clear();
  }
  void TearDown() override {
    plugin_reset_for_tests();  // the real clock and the default sweep again
    InterposerRecorder::instance().set_plugin_active(false);
  }
};
using Versions = ::testing::Types<V5, V6>;
TYPED_TEST_SUITE(PluginChannels, Versions);

// A self send/recv announces channels (NCCL gives it a channel count) but gets no proxy
// operation, so no KernelCh: it completes at its stop. So does a one-rank communicator's
// collective. Emitted once each, CPU times; a later sweep or finalize adds nothing.
TYPED_TEST(PluginChannels, ChannelLessOperationsCompleteAtTheirOwnStopWithHostTimes) {
  using N = typename TestFixture::Driver;
  void* ctx = N::init(0xA5, 8, 3);
  void* send = N::op(ctx, kProfileP2p, "Send", 3, 2, 3);
  void* recv = N::op(ctx, kProfileP2p, "Recv", 3, 2, 3);
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_TRUE(sp_test_recorded().empty()) << "nothing before the stop";
  ASSERT_EQ(N::stop(send), 0);
  ASSERT_EQ(N::stop(recv), 0);
  void* one = N::init(0xA6, 1, 0);
  void* ar = N::op(one, kProfileColl, "AllReduce", -1, 1, 0);
  ASSERT_EQ(N::stop(ar), 0);

  plugin_sweep(0);
  N::finalize(ctx);
  N::finalize(one);
  const auto ev = sp_test_recorded();
  ASSERT_EQ(ev.size(), 3u) << "each once, at its stop";
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_SEND));
  EXPECT_EQ(ev[0].peer, 3);
  EXPECT_EQ(ev[1].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[2].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE));
  EXPECT_EQ(ev[2].group_size, 1);
  for (const sp_event& e : ev) {
    EXPECT_EQ(e.time_source, kHost);
    EXPECT_GT(e.start_ns, 0u);
    EXPECT_LE(e.start_ns, e.end_ns);
  }
  const PluginStats s = plugin_stats();
  EXPECT_EQ(s.ops_started, 3u);
  EXPECT_EQ(s.ops_completed, 3u);
  EXPECT_EQ(s.ops_no_channel, 3u);
  EXPECT_EQ(s.ops_emitted, 3u);
  EXPECT_EQ(s.ops_swept, 0u);
  EXPECT_EQ(s.ops_gpu_timed, 0u);
  const sp_nccl_stats c = c_stats();
  EXPECT_EQ(c.plugin_ops_started, 3u);
  EXPECT_EQ(c.plugin_ops_completed, 3u);
  EXPECT_EQ(c.plugin_ops_no_channel, 3u);
  EXPECT_EQ(c.plugin_ops, 3u);
  EXPECT_EQ(c.plugin_ops_swept, 0u);
}

// A send to another rank with 2 channels waits for both; the last channel's stop completes it
// with the GPU span (first channel start to last channel stop).
TYPED_TEST(PluginChannels, OperationWithTwoChannelsCompletesAtItsLastChannelStopWithGpuTimes) {
  using N = typename TestFixture::Driver;
  void* ctx = N::init(0xB5, 4, 1);
  void* h = N::op(ctx, kProfileP2p, "Send", 2, 2, 1);
  ASSERT_EQ(N::stop(h), 0);
  EXPECT_TRUE(sp_test_recorded().empty()) << "its channels are still due";
  const uint64_t t0 = gpu::probe_now_ns();
  void* c0 = N::channel(ctx, h, 0, t0 + 100);
  void* c1 = N::channel(ctx, h, 1, t0 + 50);
  ASSERT_NE(c0, nullptr);
  ASSERT_NE(c1, nullptr);
  N::channel_stop(c1, t0 + 4000);
  EXPECT_TRUE(sp_test_recorded().empty()) << "one channel still running";
  N::channel_stop(c0, t0 + 6000);
  const auto ev = sp_test_recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].time_source, kGpu);
  EXPECT_EQ(ev[0].start_ns, t0 + 50);
  EXPECT_EQ(ev[0].end_ns, t0 + 6000);
  EXPECT_EQ(ev[0].peer, 2);
  const PluginStats s = plugin_stats();
  EXPECT_EQ(s.ops_started, 1u);
  EXPECT_EQ(s.ops_completed, 1u);
  EXPECT_EQ(s.ops_gpu_timed, 1u);
  EXPECT_EQ(s.ops_no_channel, 0u);
  N::finalize(ctx);
  EXPECT_EQ(sp_test_recorded().size(), 1u);
}

// A fast kernel: both channels end before NCCL stops the event; the stop completes it, GPU times.
TYPED_TEST(PluginChannels, ChannelsEndingBeforeTheStopCompleteAtTheStopWithGpuTimes) {
  using N = typename TestFixture::Driver;
  void* ctx = N::init(0xC5, 2, 0);
  void* h = N::op(ctx, kProfileColl, "AllGather", -1, 2, 0);
  const uint64_t t0 = gpu::probe_now_ns();
  for (uint8_t c = 0; c < 2; ++c) {
    void* ch = N::channel(ctx, h, c, t0 + c);
    N::channel_stop(ch, t0 + 1000 + c);
  }
  EXPECT_TRUE(sp_test_recorded().empty()) << "not before NCCL's stop";
  ASSERT_EQ(N::stop(h), 0);
  const auto ev = sp_test_recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].time_source, kGpu);
  EXPECT_EQ(ev[0].end_ns - ev[0].start_ns, 1001u);
  N::finalize(ctx);
}

class PluginSweep : public PluginChannels<V5> {
 protected:
  using N = Driver;
};

// Channels announced, one of two never starts: swept after the bound (5 s here), not before, by
// the start / stop of later operations, at most once per period (1 s); CPU times. A channel
// starting after the sweep is dropped (stale), never attributed to the handle's next operation.
TEST_F(PluginSweep, StuckOperationIsSweptAfterTheBoundAtMostOncePerPeriod) {
  const uint64_t t0 = gpu::probe_now_ns();
  g_fake_now = t0;
  plugin_set_sweep_for_tests(5 * kSecond, kSecond, &fake_now);
  void* ctx = N::init(0xD5, 2, 0);
  void* stuck = N::op(ctx, kProfileColl, "AllReduce", -1, 2, 0);
  ASSERT_EQ(N::stop(stuck), 0);
  N::channel_stop(N::channel(ctx, stuck, 0, t0), t0 + 10);  // the other channel never starts
  g_fake_now = t0 + kSecond;
  void* later = N::op(ctx, kProfileColl, "AllReduce", -1, 2, 0);  // swept at t0 + 7.5 s
  ASSERT_EQ(N::stop(later), 0);
  auto tick = [&](uint64_t at) {  // a channel-less operation: runs the sweep when it is due
    g_fake_now = t0 + at;
    ASSERT_EQ(N::stop(N::op(ctx, kProfileP2p, "Send", 0, 1, 0)), 0);
  };
  tick(4 * kSecond);
  EXPECT_EQ(plugin_stats().ops_swept, 0u) << "4 s: within the bound";
  tick(5 * kSecond + kSecond / 2);
  EXPECT_EQ(plugin_stats().ops_swept, 1u) << "5.5 s: past the bound";
  tick(6 * kSecond + kSecond / 5);
  EXPECT_EQ(plugin_stats().ops_swept, 1u) << "6.2 s: the later one is old enough, not due yet";
  tick(6 * kSecond + kSecond * 3 / 5);
  EXPECT_EQ(plugin_stats().ops_swept, 2u) << "6.6 s: a period after the last sweep";

  std::vector<sp_event> swept;
  for (const sp_event& e : sp_test_recorded()) {
    if (e.kind != SP_OP_SEND) swept.push_back(e);
  }
  ASSERT_EQ(swept.size(), 2u);
  EXPECT_EQ(swept[0].time_source, kHost);
  EXPECT_EQ(swept[0].start_ns, t0);
  EXPECT_EQ(swept[1].start_ns, t0 + kSecond);
  EXPECT_EQ(N::channel(ctx, stuck, 1, t0 + 20), nullptr) << "its late channel is not attached";
  EXPECT_EQ(plugin_stats().stale_channels, 1u);
  const sp_nccl_stats c = c_stats();
  EXPECT_EQ(c.plugin_ops_started, 6u);
  EXPECT_EQ(c.plugin_ops_swept, 2u);
  EXPECT_EQ(c.plugin_ops_completed, 4u);
  EXPECT_EQ(c.plugin_ops, 6u);
  N::finalize(ctx);
}

// A channel in flight means a kernel runs the operation (waiting for a slow peer, say): however
// long, it is not swept, and its channel's stop completes it with GPU times.
TEST_F(PluginSweep, OperationWithAChannelInFlightIsNeverSwept) {
  const uint64_t t0 = gpu::probe_now_ns();
  g_fake_now = t0;
  plugin_set_sweep_for_tests(kSecond, 0, &fake_now);
  void* ctx = N::init(0xE5, 2, 0);
  void* h = N::op(ctx, kProfileP2p, "Recv", 1, 1, 0);
  ASSERT_EQ(N::stop(h), 0);
  void* ch = N::channel(ctx, h, 0, t0 + 5);
  g_fake_now = t0 + 60 * kSecond;
  plugin_sweep(kSecond);
  ASSERT_EQ(N::stop(N::op(ctx, kProfileP2p, "Send", 0, 1, 0)), 0);  // a timed sweep as well
  EXPECT_EQ(plugin_stats().ops_swept, 0u);
  N::channel_stop(ch, t0 + 2 * kSecond);
  const auto ev = sp_test_recorded();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[1].time_source, kGpu);
  EXPECT_EQ(ev[1].end_ns - ev[1].start_ns, 2 * kSecond - 5);
  N::finalize(ctx);
}

// The state word alone: exactly one owner whatever the order, and a sweep that read an earlier
// use of the handle cannot retire the next one.
TEST(PluginOpState, OneOwnerAndNoRetiringAReusedHandle) {
  using plugin::OpState;
  OpState st;
  st.begin(false);
  bool first = false;
  ASSERT_TRUE(st.attach_channel(&first));
  EXPECT_TRUE(first);
  EXPECT_EQ(st.stop_op(1), OpState::Outcome::kWait) << "a channel in flight";
  EXPECT_FALSE(OpState::idle(st.load())) << "the sweep leaves it alone";
  EXPECT_EQ(st.detach_channel(1), OpState::Outcome::kComplete);
  EXPECT_FALSE(st.attach_channel(&first)) << "retired: no more channels";

  st.begin(false);
  EXPECT_EQ(st.stop_op(2), OpState::Outcome::kWait);
  const uint64_t seen = st.load();
  st.begin(false);  // given back and reused meanwhile
  EXPECT_EQ(st.stop_op(2), OpState::Outcome::kWait);
  EXPECT_FALSE(st.retire_if_idle(seen)) << "another generation";
  EXPECT_TRUE(st.retire_if_idle(st.load()));
  EXPECT_FALSE(st.retire_if_idle(st.load())) << "once";

  st.begin(true);  // captured without channels: nothing will ever report its replays
  EXPECT_EQ(st.stop_op(0), OpState::Outcome::kDrop);
}

// The three threads that race on an operation: NCCL's user thread stops it, its proxy thread runs
// one channel, the sweep tries to retire it. Whatever the interleaving, exactly one owns it.
TEST(PluginOpState, ExactlyOneOwnerWhenStopChannelAndSweepRace) {
  using plugin::OpState;
  constexpr int kOps = 4096;
  std::vector<OpState> ops(kOps);
  std::vector<std::atomic<int>> owners(kOps);
  auto own = [&](int i, bool owned) {
    if (owned) owners[i].fetch_add(1);
  };
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < kOps; ++i) {
      ops[i].begin(false);
      owners[i] = 0;
    }
    std::atomic<int> done{0};
    std::atomic<int> ready{0};
    auto start_together = [&] {
      ready.fetch_add(1);
      while (ready.load() < 3) std::this_thread::yield();
    };
    std::thread user([&] {
      start_together();
      for (int i = 0; i < kOps; ++i) own(i, ops[i].stop_op(1) == OpState::Outcome::kComplete);
      done.fetch_add(1);
    });
    std::thread proxy([&] {
      start_together();
      for (int i = 0; i < kOps; ++i) {
        bool first = false;
        if (ops[i].attach_channel(&first)) {
          own(i, ops[i].detach_channel(1) == OpState::Outcome::kComplete);
        }
      }
      done.fetch_add(1);
    });
    std::thread sweeper([&] {
      start_together();
      while (done.load() < 2) {
        for (int i = 0; i < kOps; ++i) own(i, ops[i].retire_if_idle(ops[i].load()));
      }
    });
    user.join();
    proxy.join();
    sweeper.join();
    for (int i = 0; i < kOps; ++i) ASSERT_EQ(owners[i].load(), 1) << "op " << i;
  }
}

}  // namespace
}  // namespace sp::nccl
