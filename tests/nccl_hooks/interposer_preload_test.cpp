// The interposer under LD_PRELOAD, against a fake libnccl.so.2 (weak nccl*, strong pnccl*): every
// call reaches the fake with its arguments intact and is recorded with the right metadata; a
// ncclGroupStart/End group comes out as one operation. The probe side runs in the preloaded test
// library (interposer + a stand-in runtime); this program is linked only against the fake NCCL.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_runtime.h"
#include "straggler_probe/gpu/nccl_c_api.h"
#include "nccl_api_decls.h"

namespace {

template <typename Fn>
Fn probe_fn(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::vector<sp_event> recorded() {
  auto events = probe_fn<sp_test_events_fn>("sp_test_events");
  if (events == nullptr) return {};
  std::vector<sp_event> out(events(nullptr, 0));
  events(out.data(), out.size());
  return out;
}

std::string name_of(const sp_event& e) {
  auto name = probe_fn<sp_test_name_fn>("sp_test_name");
  return name != nullptr ? name(e.name_id) : "";
}

std::vector<fake_nccl_call> calls() {
  size_t n = 0;
  const fake_nccl_call* log = fake_nccl_log(&n);
  return std::vector<fake_nccl_call>(log, log + n);
}

// NCCL's commHash construction, written out independently of the probe: DJB2a over the bytes.
uint64_t djb2a(const ncclUniqueId& id) {
  uint64_t h = 5381;
  for (char c : id.internal) h = ((h << 5) + h) ^ static_cast<uint64_t>(static_cast<int64_t>(c));
  return h;
}

ncclUniqueId make_id(char seed) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  }
  return id;
}

class InterposerPreload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(probe_fn<sp_test_events_fn>("sp_test_events"), nullptr)
        << "run with LD_PRELOAD of the test probe library";
    id_ = make_id(3);
    ASSERT_EQ(ncclCommInitRank(&comm_, 4, id_, 1), 0);
    probe_fn<sp_test_clear_fn>("sp_test_clear")();
    fake_nccl_clear_log();
  }
  void TearDown() override { ncclCommDestroy(comm_); }

  ncclUniqueId id_{};
  ncclComm_t comm_ = nullptr;
  void* stream_ = reinterpret_cast<void*>(uintptr_t{0x5000});
};

TEST_F(InterposerPreload, AllReduceReachesNcclIntactAndIsRecorded) {
  float send[8] = {}, recv[8] = {};
  ASSERT_EQ(ncclAllReduce(send, recv, 8, kFloat32, kSum, comm_, stream_), 0);
  ASSERT_EQ(ncclAllReduce(send, recv, 1000, kBfloat16, 2, comm_, stream_), 0);

  const auto c = calls();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_STREQ(c[0].name, "pncclAllReduce");
  EXPECT_EQ(c[0].sendbuff, send);
  EXPECT_EQ(c[0].recvbuff, recv);
  EXPECT_EQ(c[0].count, 8u);
  EXPECT_EQ(c[0].datatype, kFloat32);
  EXPECT_EQ(c[0].op, kSum);
  EXPECT_EQ(c[0].comm, comm_);
  EXPECT_EQ(c[0].stream, stream_);
  EXPECT_EQ(c[1].count, 1000u);
  EXPECT_EQ(c[1].datatype, kBfloat16);
  EXPECT_EQ(c[1].op, 2);

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ev[i].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
    EXPECT_EQ(ev[i].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE));
    EXPECT_EQ(ev[i].group_id, djb2a(id_)) << "group_id is NCCL's commHash of the unique id";
    EXPECT_EQ(ev[i].group_size, 4);
    EXPECT_EQ(ev[i].peer, -1);
    EXPECT_EQ(ev[i].time_source, static_cast<uint32_t>(SP_TIME_CPU)) << "no GPU here";
    EXPECT_LE(ev[i].start_ns, ev[i].end_ns);
    EXPECT_EQ(name_of(ev[i]), "ncclAllReduce");
  }
  EXPECT_EQ(ev[0].bytes, 32u);
  EXPECT_EQ(ev[1].bytes, 2000u);
  EXPECT_EQ(ev[1].seq, ev[0].seq + 1) << "per-communicator sequence";
}

TEST_F(InterposerPreload, EveryCollectiveAndP2pEntryPoint) {
  int64_t a[16] = {}, b[16] = {};
  ASSERT_EQ(ncclBroadcast(a, b, 16, kInt64, 2, comm_, stream_), 0);
  ASSERT_EQ(ncclReduce(a, b, 16, kInt64, kSum, 3, comm_, stream_), 0);
  ASSERT_EQ(ncclAllGather(a, b, 4, kInt64, comm_, stream_), 0);
  ASSERT_EQ(ncclReduceScatter(a, b, 4, kInt64, kSum, comm_, stream_), 0);
  ASSERT_EQ(ncclAlltoAll(a, b, 4, kInt64, comm_, stream_), 0);
  ASSERT_EQ(ncclGather(a, b, 4, kInt64, 0, comm_, stream_), 0);
  ASSERT_EQ(ncclScatter(a, b, 4, kInt64, 0, comm_, stream_), 0);
  ASSERT_EQ(ncclSend(a, 5, kInt64, 3, comm_, stream_), 0);
  ASSERT_EQ(ncclSend(a, 6, kInt64, 3, comm_, stream_), 0);
  ASSERT_EQ(ncclRecv(b, 7, kInt64, 0, comm_, stream_), 0);

  const auto c = calls();
  const char* expected[] = {"pncclBroadcast", "pncclReduce",  "pncclAllGather", "pncclReduceScatter",
                            "pncclAlltoAll",  "pncclGather",  "pncclScatter",   "pncclSend",
                            "pncclSend",      "pncclRecv"};
  ASSERT_EQ(c.size(), std::size(expected));
  for (size_t i = 0; i < c.size(); ++i) EXPECT_STREQ(c[i].name, expected[i]);
  EXPECT_EQ(c[0].root, 2);
  EXPECT_EQ(c[1].root, 3);
  EXPECT_EQ(c[7].peer, 3);
  EXPECT_EQ(c[7].sendbuff, a);
  EXPECT_EQ(c[9].recvbuff, b);

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 10u);
  const sp_coll_type types[] = {SP_COLL_BROADCAST,  SP_COLL_REDUCE, SP_COLL_ALL_GATHER,
                                SP_COLL_REDUCE_SCATTER, SP_COLL_ALL_TO_ALL, SP_COLL_GATHER,
                                SP_COLL_SCATTER,    SP_COLL_SEND,   SP_COLL_SEND,
                                SP_COLL_RECV};
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].coll, static_cast<uint32_t>(types[i]));
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(ev[i].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
    if (i > 0) {
      EXPECT_EQ(ev[i].seq, ev[i - 1].seq + 1) << "collectives share one counter";
    }
  }
  EXPECT_EQ(ev[0].bytes, 128u);
  EXPECT_EQ(ev[2].bytes, 32u) << "count as passed: AllGather's per-rank send count";
  EXPECT_EQ(ev[7].kind, static_cast<uint32_t>(SP_OP_SEND));
  EXPECT_EQ(ev[7].peer, 3);
  EXPECT_EQ(ev[7].bytes, 40u);
  EXPECT_EQ(ev[8].seq, ev[7].seq + 1) << "second send to the same peer";
  EXPECT_EQ(ev[9].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[9].peer, 0);
  EXPECT_EQ(ev[9].seq, 0u) << "p2p counters are per peer and direction";
}

TEST_F(InterposerPreload, BcastIsRecordedOnceThoughNcclCallsBroadcastInside) {
  float x[4] = {};
  ASSERT_EQ(ncclBcast(x, 4, kFloat32, 1, comm_, stream_), 0);
  const auto c = calls();
  ASSERT_EQ(c.size(), 2u);  // pncclBcast, then its inner ncclBroadcast (through the interposer)
  EXPECT_STREQ(c[1].name, "pncclBroadcast");
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_BROADCAST));
}

TEST_F(InterposerPreload, AGroupComesOutAsOneOperation) {
  float a[4], b[4] = {};
  ASSERT_EQ(ncclGroupStart(), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(ncclAllReduce(a, b, 100, kFloat32, kSum, comm_, stream_), 0);
  ASSERT_EQ(ncclGroupEnd(), 0);
  EXPECT_EQ(calls().size(), 5u) << "GroupStart, 3 x AllReduce, GroupEnd all reached NCCL";
  EXPECT_EQ(fake_nccl_group_depth(), 0);

  auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_ALL_REDUCE)) << "coalesced all-reduce";
  EXPECT_EQ(ev[0].bytes, 1200u);
  EXPECT_EQ(ev[0].group_id, djb2a(id_));

  // Nested groups with p2p both ways to one peer: still one operation.
  probe_fn<sp_test_clear_fn>("sp_test_clear")();
  ASSERT_EQ(ncclGroupStart(), 0);
  ASSERT_EQ(ncclGroupStart(), 0);
  ASSERT_EQ(ncclSend(a, 4, kFloat32, 2, comm_, stream_), 0);
  ASSERT_EQ(ncclRecv(b, 4, kFloat32, 2, comm_, stream_), 0);
  ASSERT_EQ(ncclGroupEnd(), 0);
  EXPECT_TRUE(recorded().empty()) << "inner ncclGroupEnd records nothing";
  ASSERT_EQ(ncclGroupEnd(), 0);
  ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].coll, static_cast<uint32_t>(SP_COLL_NONE));
  EXPECT_EQ(name_of(ev[0]), "ncclGroup");
  EXPECT_EQ(ev[0].peer, 2);
  EXPECT_EQ(ev[0].bytes, 32u);

  // All sends to several peers: one SEND, no single peer.
  probe_fn<sp_test_clear_fn>("sp_test_clear")();
  ASSERT_EQ(ncclGroupStart(), 0);
  ASSERT_EQ(ncclSend(a, 1, kFloat32, 0, comm_, stream_), 0);
  ASSERT_EQ(ncclSend(a, 1, kFloat32, 2, comm_, stream_), 0);
  ASSERT_EQ(ncclGroupEnd(), 0);
  ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, static_cast<uint32_t>(SP_OP_SEND));
  EXPECT_EQ(ev[0].peer, -1);
}

TEST_F(InterposerPreload, FailedCallsPassTheirErrorAndAreNotRecorded) {
  float a[2] = {};
  fake_nccl_fail_next("pncclAllReduce", 4 /*ncclInvalidArgument*/);
  EXPECT_EQ(ncclAllReduce(a, a, 2, kFloat32, kSum, comm_, stream_), 4);
  EXPECT_EQ(calls().size(), 1u);
  EXPECT_TRUE(recorded().empty());
}

TEST_F(InterposerPreload, NonBlockingCommunicatorsAreRecordedWithHostTimes) {
  ncclComm_t nb = nullptr;
  int config = 1;
  const ncclUniqueId id = make_id(9);
  EXPECT_EQ(ncclCommInitRankConfig(&nb, 2, id, 0, &config), 7) << "ncclInProgress passes through";
  probe_fn<sp_test_clear_fn>("sp_test_clear")();
  float a[2] = {};
  EXPECT_EQ(ncclAllReduce(a, a, 2, kFloat32, kSum, nb, stream_), 7);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].group_id, djb2a(id));
  EXPECT_EQ(ev[0].group_size, 2);
  EXPECT_EQ(ev[0].time_source, static_cast<uint32_t>(SP_TIME_CPU));
  ncclCommDestroy(nb);
}

TEST_F(InterposerPreload, SplitCommunicatorsGetADeterministicIdentity) {
  ncclComm_t child = nullptr, none = nullptr;
  ASSERT_EQ(ncclCommSplit(comm_, 1, 0, &child, nullptr), 0);
  ASSERT_EQ(ncclCommSplit(comm_, -1, 0, &none, nullptr), 0);  // NCCL_SPLIT_NOCOLOR
  EXPECT_EQ(none, nullptr);
  float a[2] = {};
  ASSERT_EQ(ncclAllReduce(a, a, 2, kFloat32, kSum, child, stream_), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NE(ev[0].group_id, 0u);
  EXPECT_NE(ev[0].group_id, djb2a(id_));
  EXPECT_EQ(ev[0].group_size, 2) << "size asked from NCCL (ncclCommCount)";
  EXPECT_EQ(ev[0].seq, 0u) << "a new communicator starts its own sequence";
  ncclCommDestroy(child);
}

// NCCL 2.29's one-sided operations reach NCCL intact and are recorded as SEND / RECV in a
// sequence space of their own (never shifting the communicator's send/recv matching): a wait for
// k signals from a peer is numbered as the last of them, so it matches the put that completes it.
TEST_F(InterposerPreload, OneSidedOperationsAreRecordedInTheirOwnSequence) {
  float buf[16] = {};
  void* window = reinterpret_cast<void*>(uintptr_t{0x7000});
  ASSERT_EQ(ncclSend(buf, 4, kFloat32, 2, comm_, stream_), 0);
  ASSERT_EQ(ncclPutSignal(buf, 16, kFloat32, 2, window, 64, 0, 0, 0, comm_, stream_), 0);
  ASSERT_EQ(ncclSignal(2, 0, 0, 0, comm_, stream_), 0);
  WaitSignalDesc wait{2, 3, 0, 0};  // two signals from rank 3
  ASSERT_EQ(ncclWaitSignal(1, &wait, comm_, stream_), 0);
  ASSERT_EQ(ncclSend(buf, 4, kFloat32, 2, comm_, stream_), 0);

  const auto c = calls();
  ASSERT_EQ(c.size(), 5u);
  EXPECT_STREQ(c[1].name, "pncclPutSignal");
  EXPECT_EQ(c[1].count, 16u);
  EXPECT_EQ(c[1].peer, 2);
  EXPECT_STREQ(c[2].name, "pncclSignal");
  EXPECT_STREQ(c[3].name, "pncclWaitSignal");
  EXPECT_EQ(c[3].recvbuff, &wait) << "the descriptors reach NCCL as passed";

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].seq, 0u);
  EXPECT_EQ(ev[4].seq, 1u) << "one-sided operations do not shift send/recv numbering";
  EXPECT_EQ(ev[4].group_id, djb2a(id_));
  EXPECT_EQ(name_of(ev[1]), "ncclPutSignal");
  EXPECT_EQ(ev[1].kind, static_cast<uint32_t>(SP_OP_SEND));
  EXPECT_EQ(ev[1].bytes, 64u);
  EXPECT_EQ(ev[1].peer, 2);
  EXPECT_EQ(ev[1].seq, 0u);
  EXPECT_NE(ev[1].group_id, djb2a(id_)) << "a space of their own";
  EXPECT_NE(ev[1].group_id, 0u);
  EXPECT_EQ(name_of(ev[2]), "ncclSignal");
  EXPECT_EQ(ev[2].bytes, 0u);
  EXPECT_EQ(ev[2].seq, 1u) << "a signal counts like a put toward the same peer";
  EXPECT_EQ(ev[2].group_id, ev[1].group_id);
  EXPECT_EQ(name_of(ev[3]), "ncclWaitSignal");
  EXPECT_EQ(ev[3].kind, static_cast<uint32_t>(SP_OP_RECV));
  EXPECT_EQ(ev[3].peer, 3);
  EXPECT_EQ(ev[3].seq, 1u) << "waits for signals 0 and 1 from rank 3: numbered as the last";
}

// ncclCommGrow's members pass different arguments, so the grown communicator has no identity all
// of them share: its operations are recorded without one (group 0), with NCCL's rank and size.
TEST_F(InterposerPreload, AGrownCommunicatorIsRecordedWithoutAnIdentity) {
  ncclComm_t grown = nullptr;
  ASSERT_EQ(ncclCommGrow(comm_, 6, nullptr, -1, &grown, nullptr), 0);
  ASSERT_NE(grown, nullptr);
  float a[2] = {};
  ASSERT_EQ(ncclAllReduce(a, a, 2, kFloat32, kSum, grown, stream_), 0);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].group_id, 0u);
  EXPECT_EQ(ev[0].group_size, 6);
  ncclCommDestroy(grown);
}

TEST_F(InterposerPreload, RtldLocalConsumersAreInterposedToo) {
  // A library loaded RTLD_LOCAL that links libnccl (like torch's extension modules): its calls
  // reach the interposer, which finds the real pnccl* via RTLD_NOLOAD, not RTLD_NEXT.
  const char* path = std::getenv("SP_TEST_CONSUMER_LIB");
  ASSERT_NE(path, nullptr);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  using Fn = int (*)(void*, void*);
  auto fn = reinterpret_cast<Fn>(dlsym(h, "consumer_all_reduce"));
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn(comm_, stream_), 0);
  const auto c = calls();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].count, 77u);
  const auto ev = recorded();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].bytes, 77u * 4);
}

TEST_F(InterposerPreload, CountersAndRecentOperationsAreExported) {
  auto stats = probe_fn<int (*)(sp_nccl_stats*)>("sp_nccl_get_stats");
  auto recent = probe_fn<size_t (*)(sp_event*, size_t)>("sp_nccl_recent_ops");
  ASSERT_NE(stats, nullptr);
  ASSERT_NE(recent, nullptr);
  sp_nccl_stats before{};
  before.struct_size = sizeof(before);
  ASSERT_EQ(stats(&before), SP_OK);
  float a[3] = {};
  ASSERT_EQ(ncclReduce(a, a, 3, kFloat32, kSum, 1, comm_, stream_), 0);
  sp_nccl_stats after{};
  after.struct_size = sizeof(after);
  ASSERT_EQ(stats(&after), SP_OK);
  EXPECT_EQ(after.recorded, before.recorded + 1);
  EXPECT_EQ(after.plugin_active, 0u);
  sp_event ops[64];
  const size_t n = recent(ops, 64);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(ops[n < 64 ? n - 1 : 63].coll, static_cast<uint32_t>(SP_COLL_REDUCE));
}

TEST(InterposerPreloadProcess, ARankStartsTheRuntimeOnce) {
  auto inits = probe_fn<sp_test_inits_fn>("sp_test_inits");
  ASSERT_NE(inits, nullptr);
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitRank(&c, 2, make_id(1), 0), 0);
  float a[1] = {};
  ncclAllReduce(a, a, 1, kFloat32, kSum, c, nullptr);
  EXPECT_EQ(inits(), 1);
  ncclCommDestroy(c);
}

}  // namespace

namespace {

TEST(NotARank, CallsPassThroughAndNothingIsRecorded) {
  if (std::getenv("RANK") != nullptr) GTEST_SKIP() << "run without RANK/WORLD_SIZE";
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitRank(&c, 2, make_id(5), 0), 0);
  fake_nccl_clear_log();
  float a[3] = {};
  ASSERT_EQ(ncclAllReduce(a, a, 3, kFloat32, kSum, c, nullptr), 0);
  ASSERT_EQ(ncclGroupStart(), 0);
  ASSERT_EQ(ncclSend(a, 3, kFloat32, 1, c, nullptr), 0);
  ASSERT_EQ(ncclGroupEnd(), 0);
  EXPECT_EQ(calls().size(), 4u) << "everything reached NCCL";
  EXPECT_TRUE(recorded().empty());
  auto inits = probe_fn<sp_test_inits_fn>("sp_test_inits");
  ASSERT_NE(inits, nullptr);
  EXPECT_EQ(inits(), 0) << "the runtime is not started in a process that is not a rank";
  ncclCommDestroy(c);
}

}  // namespace
