// The NCCL profiler plugin entry points ncclProfiler_v1..v6 driven with synthetic descriptors of
// each version, as NCCL would call them: the expected events come out (communicator identity,
// rank, size, sequence, bytes, peer, and GPU times from KernelCh for v4/v5).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_runtime.h"
#include "interposer/interposer_recorder.h"
#include "plugin/abi/nccl_profiler_api.h"
#include "plugin/core/profiler_plugin_core.h"
#include "straggler_probe/event_sink.h"

namespace sp::nccl {
namespace {

std::vector<sp_event> recorded() { return sp_test_recorded(); }

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The plugin records only in a rank (read once, at the first plugin call of the process).
    setenv("RANK", "0", 0);
    setenv("WORLD_SIZE", "2", 0);
    plugin_reset_for_tests();
    sp_test_clear();
  }
  // Every plugin init sets the interposer aside; hand it back even when an assertion ended the
  // test early, so the next test starts from the same state.
  void TearDown() override { InterposerRecorder::instance().set_plugin_active(false); }
};

constexpr uint64_t kHash = 0xC0FFEE1234ull;

TEST_F(PluginTest, V5CollectiveWithKernelChannelTimes) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, kHash, &mask, "dp", 1, 8, 3, nullptr), 0);
  EXPECT_STREQ(ncclProfiler_v5.name, "straggler_probe");
  EXPECT_TRUE(mask & kProfileColl);
  EXPECT_TRUE(mask & kProfileP2p);
  EXPECT_TRUE(mask & kProfileKernelCh);
  EXPECT_TRUE(mask & kProfileKernelLaunch);
  EXPECT_FALSE(mask & kProfileProxyStep) << "no per-step proxy events: overhead";
  EXPECT_TRUE(InterposerRecorder::instance().plugin_active()) << "the interposer steps aside";

  api::DescrV5 coll{};
  coll.type = kProfileColl;
  coll.rank = 3;
  coll.coll.seqNumber = 41;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1024;
  coll.coll.datatype = "ncclBfloat16";
  coll.coll.nChannels = 2;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &coll), 0);
  ASSERT_NE(h, nullptr);

  // The kernel launch bracket (CUPTI tagging) on the user thread.
  api::DescrV5 launch{};
  launch.type = kProfileKernelLaunch;
  void* lh = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &lh, &launch), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(lh), 0);

  ASSERT_EQ(ncclProfiler_v5.stopEvent(h), 0);  // enqueued: not complete yet
  EXPECT_TRUE(recorded().empty());

  // Two channels report from the proxy thread with %globaltimer stamps.
  const uint64_t t0 = gpu::probe_now_ns();
  void* ch[2] = {nullptr, nullptr};
  for (int c = 0; c < 2; ++c) {
    api::DescrV5 k{};
    k.type = kProfileKernelCh;
    k.parentObj = h;
    k.kernelCh.channelId = static_cast<uint8_t>(c);
    k.kernelCh.pTimer = t0 + 1000 + static_cast<uint64_t>(c) * 100;
    ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch[c], &k), 0);
    ASSERT_NE(ch[c], nullptr);
  }
  api::StateArgsV5 stop{};
  stop.kernelCh.pTimer = t0 + 9000;
  ASSERT_EQ(ncclProfiler_v5.recordEventState(ch[0], kStateKernelChStop, &stop), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(ch[0]), 0);
  EXPECT_TRUE(recorded().empty()) << "one channel still running";
  stop.kernelCh.pTimer = t0 + 12000;
  ASSERT_EQ(ncclProfiler_v5.recordEventState(ch[1], kStateKernelChStop, &stop), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(ch[1]), 0);

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE));
  EXPECT_EQ(ev[0].group_id, kHash);
  EXPECT_EQ(ev[0].group_size, 8);
  EXPECT_EQ(ev[0].bytes, 2048u);
  EXPECT_EQ(ev[0].seq, 0u);
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_NCCL));
  EXPECT_EQ(ev[0].start_ns, t0 + 1000) << "first channel start";
  EXPECT_EQ(ev[0].end_ns, t0 + 12000) << "last channel stop";
  EXPECT_STREQ(sp_test_name(ev[0].name_id), "ncclAllReduce");
  EXPECT_EQ(plugin_stats().ops_gpu_timed, 1u);
  ASSERT_EQ(ncclProfiler_v5.finalize(ctx), 0);
}

// v6 (NCCL 2.29+ asks for it first): v5's events unchanged, and copy-engine collectives, which
// launch no kernel and report no channels, recorded at their stop with CPU times.
TEST_F(PluginTest, V6CollectiveChannelsAndCopyEngineCollectives) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v6.init(&ctx, kHash + 6, &mask, "tp", 1, 4, 2, nullptr), 0);
  EXPECT_STREQ(ncclProfiler_v6.name, "straggler_probe");
  EXPECT_TRUE(mask & kProfileColl);
  EXPECT_TRUE(mask & kProfileKernelCh);
  EXPECT_TRUE(mask & kProfileKernelLaunch);
  EXPECT_TRUE(mask & kProfileCeColl);
  EXPECT_FALSE(mask & (kProfileCeSync | kProfileCeBatch)) << "the parts of a CE collective: not needed";

  api::DescrV6 coll{};
  coll.type = kProfileColl;
  coll.coll.func = "AllReduce";
  coll.coll.count = 256;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.nChannels = 1;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v6.startEvent(ctx, &h, &coll), 0);
  ASSERT_EQ(ncclProfiler_v6.stopEvent(h), 0);
  const uint64_t t0 = gpu::probe_now_ns();
  api::DescrV6 k{};
  k.type = kProfileKernelCh;
  k.parentObj = h;
  k.kernelCh.pTimer = t0 + 100;
  void* kh = nullptr;
  ASSERT_EQ(ncclProfiler_v6.startEvent(ctx, &kh, &k), 0);
  api::StateArgsV6 stop{};
  stop.kernelCh.pTimer = t0 + 7100;
  ASSERT_EQ(ncclProfiler_v6.recordEventState(kh, kStateKernelChStop, &stop), 0);
  ASSERT_EQ(ncclProfiler_v6.stopEvent(kh), 0);

  api::DescrV6 ce{};
  ce.type = kProfileCeColl;
  ce.rank = 2;
  ce.ceColl.func = "AllGather";
  ce.ceColl.count = 1000;
  ce.ceColl.datatype = "ncclBfloat16";
  ce.ceColl.syncStrategy = "MC";
  ce.ceColl.ceSeqNum = 7;
  void* ceh = nullptr;
  ASSERT_EQ(ncclProfiler_v6.startEvent(ctx, &ceh, &ce), 0);
  ASSERT_NE(ceh, nullptr);
  ASSERT_EQ(ncclProfiler_v6.stopEvent(ceh), 0);

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE));
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_NCCL));
  EXPECT_EQ(ev[0].end_ns - ev[0].start_ns, 7000u);
  EXPECT_EQ(ev[1].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
  EXPECT_EQ(ev[1].coll, static_cast<uint32_t>(SP_COLL_ALL_GATHER));
  EXPECT_EQ(ev[1].group_id, kHash + 6);
  EXPECT_EQ(ev[1].group_size, 4);
  EXPECT_EQ(ev[1].bytes, 2000u);
  EXPECT_EQ(ev[1].seq, 1u) << "the communicator's collective sequence, shared with kernel collectives";
  EXPECT_EQ(ev[1].time_source, static_cast<uint32_t>(SP_TIME_CPU));
  EXPECT_STREQ(sp_test_name(ev[1].name_id), "ncclAllGather");
  EXPECT_EQ(plugin_stats().ce_ops, 1u);
  ASSERT_EQ(ncclProfiler_v6.finalize(ctx), 0);
}

// Issue 11: a collective captured into a CUDA graph starts and stops its Coll event once, at
// capture, and its channels report at every replay, naming the capture's handle. The plugin learns
// of the capture from the CollApi event (v5+), keeps that handle (never reused, however many
// operations come between replays) and emits each replay as an operation of its own, numbered by
// replay under an id derived from the communicator and the capture.
TEST_F(PluginTest, V5GraphReplaysAreEmittedPerReplayAndTheirHandleIsNeverReused) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, kHash + 50, &mask, "dp", 1, 2, 0, nullptr), 0);
  EXPECT_TRUE(mask & kProfileCollApi) << "to learn which calls are captured";
  EXPECT_TRUE(mask & kProfileP2pApi);

  api::DescrV5 capi{};
  capi.type = kProfileCollApi;
  capi.collApi.func = "AllReduce";
  capi.collApi.graphCaptured = true;
  void* api_handle = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &api_handle, &capi), 0);
  ASSERT_NE(api_handle, nullptr);
  api::DescrV5 coll{};
  coll.type = kProfileColl;
  coll.parentObj = api_handle;
  coll.coll.func = "AllReduce";
  coll.coll.count = 32;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.nChannels = 2;
  void* captured = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &captured, &coll), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(captured), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(api_handle), 0);
  EXPECT_TRUE(recorded().empty()) << "a capture is not an execution";

  auto replay = [&](uint64_t t0) {
    void* ch[2] = {nullptr, nullptr};
    for (int c = 0; c < 2; ++c) {
      api::DescrV5 k{};
      k.type = kProfileKernelCh;
      k.parentObj = captured;
      k.kernelCh.pTimer = t0 + static_cast<uint64_t>(c) * 10;
      ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch[c], &k), 0);
      ASSERT_NE(ch[c], nullptr);
    }
    for (int c = 0; c < 2; ++c) {
      api::StateArgsV5 stop{};
      stop.kernelCh.pTimer = t0 + 3000 + static_cast<uint64_t>(c) * 10;
      ncclProfiler_v5.recordEventState(ch[c], kStateKernelChStop, &stop);
      ncclProfiler_v5.stopEvent(ch[c]);
    }
  };
  const uint64_t t0 = gpu::probe_now_ns();
  replay(t0);
  // More operations than the pool holds come and go between two replays.
  api::DescrV5 plain{};
  plain.type = kProfileColl;
  plain.coll.func = "AllGather";
  plain.coll.count = 1;
  plain.coll.datatype = "ncclFloat32";
  for (int i = 0; i < 9000; ++i) {
    void* h = nullptr;
    ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &plain), 0);
    ASSERT_NE(h, nullptr);
    ASSERT_NE(h, captured) << "the captured operation's handle is never handed out again";
    ncclProfiler_v5.stopEvent(h);
  }
  sp_test_clear();
  replay(t0 + 100000);

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE));
  EXPECT_EQ(ev[0].seq, 1u) << "the second replay";
  EXPECT_NE(ev[0].group_id, kHash + 50) << "replays have a sequence space of their own";
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_NCCL));
  EXPECT_EQ(ev[0].start_ns, t0 + 100000);
  EXPECT_EQ(ev[0].end_ns, t0 + 103010);
  EXPECT_EQ(ev[0].bytes, 128u);
  EXPECT_EQ(plugin_stats().graph_ops, 1u);
  EXPECT_EQ(plugin_stats().graph_replays, 2u);
  EXPECT_EQ(plugin_stats().stale_channels, 0u);
  ASSERT_EQ(ncclProfiler_v5.finalize(ctx), 0);
}

// v4 has no API events: a replay's channel naming a handle already freed is counted and dropped,
// never attributed to whatever reuses it later.
TEST_F(PluginTest, V4ChannelsNamingAFreedHandleAreDroppedAndCounted) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v4.init(&ctx, &mask, "w", kHash + 40, 1, 2, 0, nullptr), 0);
  api::DescrV4 coll{};
  coll.type = kProfileColl;
  coll.coll.func = "AllReduce";
  coll.coll.count = 4;
  coll.coll.datatype = "ncclFloat32";
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &h, &coll), 0);
  ASSERT_EQ(ncclProfiler_v4.stopEvent(h), 0);  // no channels: complete, freed
  ASSERT_EQ(recorded().size(), 1u);
  api::DescrV4 k{};
  k.type = kProfileKernelCh;
  k.parentObj = h;
  k.kernelCh.pTimer = gpu::probe_now_ns();
  void* kh = reinterpret_cast<void*>(1);
  ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &kh, &k), 0);
  EXPECT_EQ(kh, nullptr);
  EXPECT_EQ(plugin_stats().stale_channels, 1u);
  EXPECT_EQ(recorded().size(), 1u);
  ncclProfiler_v4.finalize(ctx);
}

TEST_F(PluginTest, V5P2pAndSequencesPerCommunicator) {
  void* a = nullptr;
  void* b = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&a, 1, &mask, "pp", 1, 2, 0, nullptr), 0);
  ASSERT_EQ(ncclProfiler_v5.init(&b, 2, &mask, "dp", 1, 4, 1, nullptr), 0);
  auto run = [](void* ctx, const char* func, int peer, size_t count) {
    api::DescrV5 d{};
    d.type = std::strcmp(func, "AllGather") == 0 ? kProfileColl : kProfileP2p;
    if (d.type == kProfileColl) {
      d.coll.func = func;
      d.coll.count = count;
      d.coll.datatype = "ncclFloat32";
    } else {
      d.p2p.func = func;
      d.p2p.count = count;
      d.p2p.datatype = "ncclFloat32";
      d.p2p.peer = peer;
    }
    void* h = nullptr;
    ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
    ASSERT_EQ(ncclProfiler_v5.stopEvent(h), 0);  // nChannels = 0: complete at stop
  };
  run(a, "Send", 1, 10);
  run(a, "Send", 1, 10);
  run(a, "Recv", 1, 10);
  run(b, "AllGather", -1, 5);
  run(b, "AllGather", -1, 5);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_SEND));
  EXPECT_EQ(ev[0].peer, 1);
  EXPECT_EQ(ev[0].group_id, 1u);
  EXPECT_EQ(ev[1].seq, 1u);
  EXPECT_EQ(ev[2].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[2].seq, 0u) << "receives count separately";
  EXPECT_EQ(ev[3].group_id, 2u);
  EXPECT_EQ(ev[3].seq, 0u);
  EXPECT_EQ(ev[4].seq, 1u);
  EXPECT_EQ(ev[4].time_source, static_cast<uint32_t>(SP_TIME_CPU)) << "no channel timers";
  ncclProfiler_v5.finalize(a);
  ncclProfiler_v5.finalize(b);
}

TEST_F(PluginTest, V4CollectiveWithKernelChannelTimes) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v4.init(&ctx, &mask, "world", kHash + 4, 2, 16, 5, nullptr), 0);
  EXPECT_TRUE(mask & kProfileKernelCh);
  EXPECT_FALSE(mask & kProfileKernelLaunch) << "v4 has no launch events";
  api::DescrV4 coll{};
  coll.type = kProfileColl;
  coll.coll.func = "ReduceScatter";
  coll.coll.count = 64;
  coll.coll.datatype = "ncclFloat64";
  coll.coll.nChannels = 1;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &h, &coll), 0);
  ASSERT_EQ(ncclProfiler_v4.stopEvent(h), 0);
  const uint64_t t0 = gpu::probe_now_ns();
  api::DescrV4 k{};
  k.type = kProfileKernelCh;
  k.parentObj = h;
  k.kernelCh.pTimer = t0;
  void* kh = nullptr;
  ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &kh, &k), 0);
  api::StateArgsV4 stop{};
  stop.kernelCh.pTimer = t0 + 5000;
  ncclProfiler_v4.recordEventState(kh, kStateKernelChStop, &stop);
  ncclProfiler_v4.stopEvent(kh);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_REDUCE_SCATTER));
  EXPECT_EQ(ev[0].group_id, kHash + 4);
  EXPECT_EQ(ev[0].group_size, 16);
  EXPECT_EQ(ev[0].bytes, 512u);
  EXPECT_EQ(ev[0].end_ns - ev[0].start_ns, 5000u);
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_NCCL));
  ncclProfiler_v4.finalize(ctx);
}

TEST_F(PluginTest, V3TakesTheCommunicatorFromTheEvents) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v3.init(&ctx, &mask), 0);
  EXPECT_TRUE(mask & kProfileColl);
  EXPECT_FALSE(mask & kProfileKernelCh) << "v3 channels carry no GPU timer";
  api::DescrV3 d{};
  d.type = kProfileColl;
  d.rank = 2;
  d.coll.commHash = kHash + 3;
  d.coll.func = "Broadcast";
  d.coll.count = 3;
  d.coll.datatype = "ncclInt32";
  d.coll.root = 1;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v3.startEvent(ctx, &h, &d), 0);
  ASSERT_EQ(ncclProfiler_v3.stopEvent(h), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_BROADCAST));
  EXPECT_EQ(ev[0].group_id, kHash + 3);
  EXPECT_EQ(ev[0].bytes, 12u);
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_CPU));
  ncclProfiler_v3.finalize(ctx);
}

TEST_F(PluginTest, V2NamesAsStrings) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v2.init(&ctx, &mask), 0);
  api::DescrV2 d{};
  d.type = kProfileP2p;
  d.p2p.commHash = kHash + 2;
  d.p2p.func = "Recv";
  d.p2p.count = 8;
  d.p2p.datatype = "ncclUint8";
  d.p2p.peer = 6;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v2.startEvent(ctx, &h, &d), 0);
  ASSERT_EQ(ncclProfiler_v2.stopEvent(h), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[0].peer, 6);
  EXPECT_EQ(ev[0].bytes, 8u);
  EXPECT_EQ(ev[0].group_id, kHash + 2);
  ncclProfiler_v2.finalize(ctx);
}

TEST_F(PluginTest, V1FunctionAndDatatypeAsNumbers) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v1.init(&ctx, &mask), 0);
  api::DescrV1 d{};
  d.type = kProfileColl;
  d.coll.commHash = kHash + 1;
  d.coll.func = 2;      // ncclFuncAllGather
  d.coll.datatype = 6;  // ncclFloat16
  d.coll.count = 100;
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v1.startEvent(ctx, &h, &d), 0);
  ASSERT_EQ(ncclProfiler_v1.stopEvent(h), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_ALL_GATHER));
  EXPECT_EQ(ev[0].bytes, 200u);
  EXPECT_EQ(ev[0].group_id, kHash + 1);
  ncclProfiler_v1.finalize(ctx);
}

TEST_F(PluginTest, UntrackedEventsGetNullHandlesAndOrphanChannelsAreCounted) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, 9, &mask, "x", 1, 2, 0, nullptr), 0);
  api::DescrV5 d{};
  d.type = kProfileProxyStep;
  void* h = reinterpret_cast<void*>(1);
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
  EXPECT_EQ(h, nullptr) << "NCCL skips later calls for a null handle";
  EXPECT_EQ(ncclProfiler_v5.stopEvent(nullptr), 0);
  EXPECT_EQ(ncclProfiler_v5.recordEventState(nullptr, kStateKernelChStop, nullptr), 0);
  api::DescrV5 k{};
  k.type = kProfileKernelCh;
  k.parentObj = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &k), 0);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(plugin_stats().orphan_channels, 1u);
  ncclProfiler_v5.finalize(ctx);
}

TEST_F(PluginTest, FinalizeEmitsOperationsStillWaitingForChannels) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, 11, &mask, "x", 1, 2, 0, nullptr), 0);
  api::DescrV5 d{};
  d.type = kProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 1;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 4;  // no channel will ever report
  void* h = nullptr;
  ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
  ASSERT_EQ(ncclProfiler_v5.stopEvent(h), 0);
  EXPECT_TRUE(recorded().empty());
  ASSERT_EQ(ncclProfiler_v5.finalize(ctx), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_CPU));
  EXPECT_EQ(plugin_stats().ops_swept, 1u);
}

TEST_F(PluginTest, PoolExhaustionReturnsNullHandles) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(ncclProfiler_v5.init(&ctx, 12, &mask, "x", 1, 2, 0, nullptr), 0);
  api::DescrV5 d{};
  d.type = kProfileColl;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 1;  // kept open: never completes
  std::vector<void*> handles;
  void* h = nullptr;
  for (;;) {
    ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
    if (h == nullptr) break;
    handles.push_back(h);
    ASSERT_LT(handles.size(), 100000u);
  }
  EXPECT_GT(handles.size(), 1000u);
  EXPECT_EQ(plugin_stats().pool_exhausted, 1u);
  plugin_reset_for_tests();
  ncclProfiler_v5.finalize(ctx);
}

}  // namespace
}  // namespace sp::nccl
