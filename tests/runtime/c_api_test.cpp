// The runtime end to end through its C ABI, in this process (sp_runtime_core linked statically):
// recording, step cutting, accounting, hand-off to the transport, and stepping aside.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "api/probe_state.h"
#include "probe_test_util.h"

namespace sp::runtime::testing {
namespace {

using namespace std::chrono_literals;

class CApi : public ::testing::Test {
 protected:
  void TearDown() override {
    sp_shutdown();
    set_summary_callback(nullptr);
    pop_all();
  }
  void start(const std::function<void(sp_config&)>& tweak = {}) {
    const sp_config cfg = test_config(tweak);
    ASSERT_EQ(sp_init(&cfg), SP_OK) << sp_last_warning();
    ASSERT_EQ(sp_is_enabled(), 1);
  }
};

TEST_F(CApi, AfterShutdownEveryEntryPointIsANoOp) {
  start();
  ASSERT_EQ(sp_shutdown(), SP_OK);
  EXPECT_EQ(sp_is_enabled(), 0);
  EXPECT_EQ(sp_region_begin(SP_OP_FORWARD, 0, 0), 0u);
  EXPECT_EQ(sp_region_end(12345), SP_ERR_DISABLED);
  const sp_event ev = make_event(1, 2);
  EXPECT_EQ(sp_record(&ev), SP_ERR_DISABLED);
  EXPECT_EQ(sp_mark_step(1), SP_ERR_DISABLED);
  EXPECT_EQ(sp_annotate(0, "k", "v"), SP_ERR_DISABLED);
  EXPECT_EQ(sp_flush(), SP_ERR_DISABLED);
  EXPECT_EQ(sp_intern("forward"), 0u);
  size_t size = 0;
  EXPECT_EQ(sp_pop_summary(nullptr, 0, &size, 100), SP_ERR_DISABLED);
  EXPECT_EQ(sp_shutdown(), SP_ERR_DISABLED);
  EXPECT_EQ(stats().events_recorded, 0u);
}

TEST_F(CApi, InitIsIdempotent) {
  start();
  const sp_config other = test_config([](sp_config& c) { c.ring_capacity = 64; });
  EXPECT_EQ(sp_init(&other), SP_OK);
  EXPECT_EQ(sp_init(nullptr), SP_OK);
  EXPECT_EQ(sp_abi_version(), static_cast<uint32_t>(SP_ABI_VERSION));
}

TEST_F(CApi, NestedRegionsLandInTheirStepWithNames) {
  start();
  const uint32_t fwd = sp_intern("forward");
  const uint32_t attn = sp_intern("attention");
  ASSERT_NE(fwd, 0u);
  EXPECT_EQ(sp_intern("forward"), fwd);
  const uint64_t outer = sp_region_begin(SP_OP_FORWARD, 2, fwd);
  const uint64_t inner = sp_region_begin(SP_OP_OTHER, 2, attn);
  ASSERT_NE(outer, 0u);
  ASSERT_NE(inner, 0u);
  EXPECT_EQ(sp_region_end(inner), SP_OK);
  EXPECT_EQ(sp_region_end(outer), SP_OK);
  EXPECT_EQ(sp_region_end(outer), SP_ERR_INVALID);  // already ended
  ASSERT_EQ(sp_mark_step(5), SP_OK);
  EXPECT_EQ(sp_last_marked_step(), 5);
  ASSERT_EQ(sp_flush(), SP_OK);

  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(s.step, 5);
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(op_name(s, s.ops[0]), "forward");  // started first
  EXPECT_EQ(s.ops[0].kind, static_cast<uint32_t>(SP_OP_FORWARD));
  EXPECT_EQ(s.ops[0].microbatch, 2);
  EXPECT_EQ(s.ops[0].time_source, static_cast<uint32_t>(SP_TIME_CPU));
  EXPECT_EQ(op_name(s, s.ops[1]), "attention");
  EXPECT_LE(s.ops[0].start_ns, s.ops[1].start_ns);
  EXPECT_GE(s.ops[0].end_ns, s.ops[1].end_ns);
  EXPECT_LE(s.step_start_ns, s.ops[0].start_ns);
  EXPECT_GE(s.step_end_ns, s.ops[0].end_ns);
}

TEST_F(CApi, StepMarksCutEveryThreadsEventsAtTheirTime) {
  start();
  const uint64_t t0 = sp_now_ns();
  std::thread([&] {
    sp_event e = make_event(t0, t0 + 10, SP_OP_BACKWARD);
    EXPECT_EQ(sp_record(&e), SP_OK);
  }).join();
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  std::thread([&] {
    const uint64_t t1 = sp_now_ns();
    sp_event e = make_event(t1, t1 + 10, SP_OP_COLLECTIVE);
    e.coll = SP_COLL_ALL_REDUCE;
    e.group_id = 77;
    e.seq = 3;
    e.group_size = 4;
    EXPECT_EQ(sp_record(&e), SP_OK);
  }).join();
  ASSERT_EQ(sp_mark_step(1), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);

  StepSummary s0, s1;
  ASSERT_EQ(pop_summary(&s0, 5000ms), PopStatus::kOk);
  ASSERT_EQ(pop_summary(&s1, 5000ms), PopStatus::kOk);
  EXPECT_EQ(s0.step, 0);
  ASSERT_EQ(s0.ops.size(), 1u);
  EXPECT_EQ(s0.ops[0].kind, static_cast<uint32_t>(SP_OP_BACKWARD));
  EXPECT_EQ(s1.step, 1);
  ASSERT_EQ(s1.ops.size(), 1u);
  EXPECT_EQ(s1.ops[0].kind, static_cast<uint32_t>(SP_OP_COLLECTIVE));
  EXPECT_EQ(s1.ops[0].group_id, 77u);
  EXPECT_EQ(s1.ops[0].seq, 3u);
  EXPECT_EQ(s1.step_start_ns, s0.step_end_ns);
}

TEST_F(CApi, EventPublishedAfterItsMarkWithinTheGracePeriodStaysInItsStep) {
  start([](sp_config& c) { c.step_grace_ms = 1000; });
  const uint64_t before_mark = sp_now_ns();
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  // Another thread publishes an op that started before the mark (an async region ending late).
  std::thread([&] {
    sp_event e = make_event(before_mark, sp_now_ns(), SP_OP_OPTIMIZER);
    EXPECT_EQ(sp_record(&e), SP_OK);
  }).join();
  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 10000ms), PopStatus::kOk);  // closed by the grace period, no flush
  EXPECT_EQ(s.step, 0);
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].kind, static_cast<uint32_t>(SP_OP_OPTIMIZER));
}

TEST_F(CApi, ManyThreadsExactAccountingOfRecordedDroppedAndDelivered) {
  start([](sp_config& c) { c.ring_capacity = 1024; });
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 100000;
  std::atomic<uint64_t> ok{0}, dropped{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t my_ok = 0, my_dropped = 0;
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t now = sp_now_ns();
        sp_event e = make_event(now, now + 1, SP_OP_KERNEL);
        e.stream = static_cast<uint32_t>(t);
        e.seq = i;
        const int rc = sp_record(&e);
        if (rc == SP_OK) ++my_ok;
        else if (rc == SP_ERR_DROPPED) ++my_dropped;
        else ADD_FAILURE() << "unexpected status " << rc;
      }
      ok += my_ok;
      dropped += my_dropped;
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  ASSERT_EQ(sp_shutdown(), SP_OK);  // final pass: every marked step is queued

  const sp_stats st = stats();
  EXPECT_EQ(st.events_recorded + st.events_dropped, kThreads * kPerThread);
  EXPECT_EQ(st.events_recorded, ok.load());
  EXPECT_EQ(st.events_dropped, dropped.load());
  EXPECT_EQ(st.threads_rejected, 0u);

  uint64_t delivered = 0, reported_dropped = 0;
  std::vector<uint64_t> last_seq(kThreads, 0);
  std::vector<bool> seen_any(kThreads, false);
  for (const StepSummary& s : pop_all()) {
    delivered += s.ops.size();
    reported_dropped += s.dropped_events;
    for (const auto& op : s.ops) {
      // Within one thread, sequence numbers only grow (sorting by start keeps per-thread order).
      if (seen_any[op.stream]) {
        EXPECT_GT(op.seq, last_seq[op.stream]);
      }
      seen_any[op.stream] = true;
      last_seq[op.stream] = op.seq;
    }
  }
  EXPECT_EQ(delivered + st.events_discarded, st.events_recorded);
  EXPECT_LE(reported_dropped, st.events_dropped);
}

TEST_F(CApi, ThreadsBeyondMaxThreadsAreRejectedAndTheirEventsCounted) {
  start([](sp_config& c) { c.max_threads = 3; });
  sp_event e = event_now();
  ASSERT_EQ(sp_record(&e), SP_OK);  // this thread holds a slot too
  const uint64_t owned_before = stats().threads_registered;
  ASSERT_LE(owned_before, 3u);
  const int free_slots = 3 - static_cast<int>(owned_before);
  constexpr int kThreads = 5;
  constexpr int kEvents = 10;
  std::barrier all_recorded(kThreads);
  std::atomic<int> rejected_threads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      int drops = 0;
      for (int i = 0; i < kEvents; ++i) {
        sp_event ev = event_now();
        if (sp_record(&ev) == SP_ERR_DROPPED) ++drops;
      }
      if (drops == kEvents) ++rejected_threads;
      all_recorded.arrive_and_wait();  // hold the slots until everyone has tried
    });
  }
  for (auto& th : threads) th.join();
  const sp_stats st = stats();
  EXPECT_EQ(rejected_threads.load(), kThreads - free_slots);
  EXPECT_EQ(st.threads_rejected, static_cast<uint64_t>(kThreads - free_slots));
  EXPECT_EQ(st.events_dropped, static_cast<uint64_t>((kThreads - free_slots) * kEvents));
  EXPECT_NE(std::string(sp_last_warning()).find("STRAGGLER_PROBE_MAX_THREADS"), std::string::npos);
}

TEST_F(CApi, ThreadChurnDoesNotCountAgainstMaxThreads) {
  start([](sp_config& c) { c.max_threads = 2; });
  sp_event e = event_now();
  ASSERT_EQ(sp_record(&e), SP_OK);  // this thread holds one of the two
  for (int i = 0; i < 50; ++i) {
    int rc = SP_OK;
    std::thread([&] {
      sp_event ev = event_now();
      rc = sp_record(&ev);
    }).join();  // exits before the next starts: at most two live recording threads
    ASSERT_EQ(rc, SP_OK) << "thread " << i;
  }
  EXPECT_EQ(stats().threads_rejected, 0u);
  EXPECT_EQ(stats().events_recorded, 51u);
}

TEST_F(CApi, RegionEndOnAnotherThreadIsRejected) {
  start();
  const uint64_t token = sp_region_begin(SP_OP_BACKWARD, 0, 0);
  ASSERT_NE(token, 0u);
  int rc = SP_OK;
  std::thread([&] { rc = sp_region_end(token); }).join();
  EXPECT_EQ(rc, SP_ERR_INVALID);
  EXPECT_NE(std::string(sp_last_warning()).find("another thread"), std::string::npos);
  EXPECT_EQ(sp_region_end(token), SP_OK);  // the owner can still end it
}

TEST_F(CApi, UnbalancedAndTooDeepRegionsAreCounted) {
  start();
  const uint64_t outer = sp_region_begin(SP_OP_FORWARD, 0, 0);
  const uint64_t inner = sp_region_begin(SP_OP_OTHER, 0, 0);
  EXPECT_EQ(sp_region_end(outer), SP_OK);  // inner was never ended (exception unwound it)
  EXPECT_EQ(sp_region_end(inner), SP_ERR_INVALID);
  EXPECT_EQ(stats().regions_unbalanced, 1u);

  std::vector<uint64_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(sp_region_begin(SP_OP_OTHER, 0, 0));
  int refused = 0;
  for (uint64_t t : tokens) refused += t == 0 ? 1 : 0;
  EXPECT_EQ(refused, 40 - 32);
  EXPECT_EQ(stats().events_dropped, 8u);
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
    if (*it != 0) {
      EXPECT_EQ(sp_region_end(*it), SP_OK);
    }
  }
}

TEST_F(CApi, InvalidArgumentsAreRejected) {
  start();
  sp_event bad_kind = make_event(1, 2, 0);
  EXPECT_EQ(sp_record(&bad_kind), SP_ERR_INVALID);
  sp_event backwards = make_event(5, 4);
  EXPECT_EQ(sp_record(&backwards), SP_ERR_INVALID);
  EXPECT_EQ(sp_record(nullptr), SP_ERR_INVALID);
  EXPECT_EQ(sp_region_begin(SP_OP_KIND_MAX, 0, 0), 0u);
  EXPECT_EQ(sp_annotate(0, nullptr, "v"), SP_ERR_INVALID);
  EXPECT_EQ(sp_annotate(0, "", "v"), SP_ERR_INVALID);
  EXPECT_EQ(sp_annotate(0, "k", std::string(64 * 1024 + 1, 'x').c_str()), SP_ERR_INVALID);
  EXPECT_EQ(sp_intern(""), 0u);
  EXPECT_EQ(sp_intern(nullptr), 0u);
  EXPECT_EQ(sp_set_topology(-2, 0), SP_ERR_INVALID);
  size_t size = 0;
  EXPECT_EQ(sp_pop_summary(nullptr, 0, nullptr, 0), SP_ERR_INVALID);
  EXPECT_EQ(sp_pop_summary(nullptr, 0, &size, -1), SP_ERR_INVALID);
  EXPECT_EQ(sp_get_stats(nullptr), SP_ERR_INVALID);
  EXPECT_EQ(stats().events_recorded, 0u);
}

TEST_F(CApi, AnnotationsTopologyAndClockOffsetReachTheSummary) {
  start([](sp_config& c) {
    c.rank = 2;
    c.world_size = 4;
  });
  ASSERT_EQ(sp_set_topology(1, 0), SP_OK);
  ASSERT_EQ(sp_set_clock_offset(-250), SP_OK);
  ASSERT_EQ(sp_annotate(0, "seq_lens", "512,1024"), SP_OK);
  ASSERT_EQ(sp_annotate(1, "seq_lens", "64"), SP_OK);
  ASSERT_EQ(sp_mark_step(9), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.dp_rank, 1);
  EXPECT_EQ(s.pp_stage, 0);
  EXPECT_EQ(s.clock_offset_ns, -250);
  ASSERT_EQ(s.annotations.size(), 2u);
  EXPECT_EQ(s.annotations[0].microbatch, 0);
  EXPECT_EQ(s.annotations[0].value, "512,1024");
  EXPECT_EQ(s.annotations[1].value, "64");
}

// A launcher that sets WORLD_SIZE but not RANK: the rank is learnt from the process group
// later. Summaries queued before that must not reach rank 0 under the rank first given.
TEST_F(CApi, SetRankRestampsQueuedSummariesAndLaterOnes) {
  start([](sp_config& c) {
    c.rank = 0;
    c.world_size = 4;
    c.step_grace_ms = 1;
  });
  sp_event e = event_now();
  ASSERT_EQ(sp_record(&e), SP_OK);
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  for (int i = 0; i < 10000 && stats().steps_completed < 1; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(stats().steps_completed, 1u);  // step 0 is queued, stamped rank 0

  EXPECT_EQ(sp_set_rank(4, 4), SP_ERR_INVALID);
  EXPECT_EQ(sp_set_rank(-1, 4), SP_ERR_INVALID);
  EXPECT_EQ(sp_set_rank(0, 0), SP_ERR_INVALID);
  ASSERT_EQ(sp_set_rank(3, 4), SP_OK);
  sp_event later = event_now();
  ASSERT_EQ(sp_record(&later), SP_OK);
  ASSERT_EQ(sp_mark_step(1), SP_OK);
  ASSERT_EQ(sp_shutdown(), SP_OK);
  const std::vector<StepSummary> got = pop_all();
  ASSERT_EQ(got.size(), 2u);
  for (const StepSummary& s : got) {
    EXPECT_EQ(s.rank, 3) << "step " << s.step;
    EXPECT_EQ(s.world_size, 4) << "step " << s.step;
  }
  EXPECT_EQ(got[0].ops.size(), 1u);  // re-stamping kept the content
}

TEST_F(CApi, EncodedPopForOtherSharedObjects) {
  start();
  sp_event e = event_now(SP_OP_GC, 100);
  ASSERT_EQ(sp_record(&e), SP_OK);
  ASSERT_EQ(sp_mark_step(3), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  size_t size = 0;
  ASSERT_EQ(sp_pop_summary(nullptr, 0, &size, 5000), SP_ERR_INVALID);  // size query
  ASSERT_GT(size, 0u);
  std::string buf(size, '\0');
  ASSERT_EQ(sp_pop_summary(buf.data(), buf.size(), &size, 0), SP_OK);
  StepSummary s;
  std::string error;
  ASSERT_TRUE(decode_summary(std::string_view(buf.data(), size), &s, &error)) << error;
  EXPECT_EQ(s.step, 3);
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].kind, static_cast<uint32_t>(SP_OP_GC));
  EXPECT_EQ(sp_pop_summary(buf.data(), buf.size(), &size, 0), SP_ERR_TIMEOUT);
}

TEST_F(CApi, SlowTransportSkipsWholeStepsAndCountsThem) {
  start([](sp_config& c) {
    c.queue_steps = 2;
    c.step_grace_ms = 1;
  });
  for (int64_t step = 0; step < 5; ++step) {
    sp_event e = event_now();
    ASSERT_EQ(sp_record(&e), SP_OK);
    ASSERT_EQ(sp_mark_step(step), SP_OK);
  }
  // Closed by age while nobody pops. (Steps that a flush or the shutdown closes all at once are
  // all kept: LastSteps.*.)
  for (int i = 0; i < 10000 && stats().steps_completed < 5; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(sp_shutdown(), SP_OK);
  const std::vector<StepSummary> got = pop_all();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].step, 3);  // the freshest steps are kept
  EXPECT_EQ(got[1].step, 4);
  const sp_stats st = stats();
  EXPECT_EQ(st.steps_completed, 5u);
  EXPECT_EQ(st.steps_skipped, 3u);
}

TEST_F(CApi, ShutdownQueuesMarkedStepsAndCountsTheUnfinishedOne) {
  start([](sp_config& c) { c.step_grace_ms = 60000; });
  sp_event e = event_now();
  ASSERT_EQ(sp_record(&e), SP_OK);
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  const uint64_t after = sp_now_ns() + 1000;
  sp_event late = make_event(after, after + 1);
  ASSERT_EQ(sp_record(&late), SP_OK);  // after the last mark: an unfinished step
  ASSERT_EQ(sp_shutdown(), SP_OK);
  const std::vector<StepSummary> got = pop_all();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].ops.size(), 1u);
  EXPECT_EQ(stats().events_discarded, 1u);
}

TEST_F(CApi, SummaryCallbackSeesEveryStepAndMayThrow) {
  std::atomic<int> calls{0};
  set_summary_callback([&](const StepSummary& s) {
    ++calls;
    if (s.step == 0) throw std::runtime_error("callback bug");
  });
  start();
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  ASSERT_EQ(sp_mark_step(1), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(sp_is_enabled(), 1);  // a throwing callback does not take the probe down
  EXPECT_NE(std::string(sp_last_warning()).find("callback threw"), std::string::npos);
}

struct EncodedCalls {
  std::atomic<int> calls{0};
  std::atomic<int64_t> last_step{-1};
};

void count_encoded(const void* data, size_t size, void* user) {
  auto* calls = static_cast<EncodedCalls*>(user);
  StepSummary s;
  std::string error;
  if (decode_summary(std::string_view(static_cast<const char*>(data), size), &s, &error)) {
    calls->last_step = s.step;
  }
  ++calls->calls;
}

TEST_F(CApi, CCallbackGetsTheEncodedSummaryBeforeItIsQueued) {
  EncodedCalls calls;
  ASSERT_EQ(sp_set_summary_callback(&count_encoded, &calls), SP_OK);  // before sp_init is fine
  start();
  ASSERT_EQ(sp_mark_step(21), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(calls.calls.load(), 1);
  EXPECT_EQ(calls.last_step.load(), 21);
  ASSERT_EQ(sp_set_summary_callback(nullptr, nullptr), SP_OK);
  ASSERT_EQ(sp_mark_step(22), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(calls.calls.load(), 1);
}

TEST_F(CApi, PopGrowsItsBufferForLargeSummaries) {
  start([](sp_config& c) { c.ring_capacity = 1u << 16; });
  for (int i = 0; i < 5000; ++i) {  // 5000 x 80 bytes: larger than the first pop buffer
    sp_event e = event_now(SP_OP_KERNEL);
    ASSERT_EQ(sp_record(&e), SP_OK);
  }
  ASSERT_EQ(sp_mark_step(0), SP_OK);
  ASSERT_EQ(sp_flush(), SP_OK);
  StepSummary s;
  ASSERT_EQ(pop_summary(&s, 5000ms), PopStatus::kOk);
  EXPECT_EQ(s.ops.size(), 5000u);
}

TEST_F(CApi, BadEnvironmentValueKeepsTheProbeOffWithOneWarning) {
  setenv("STRAGGLER_PROBE_RING_CAPACITY", "abc", 1);
  const sp_config cfg = test_config();
  const int rc = sp_init(&cfg);
  unsetenv("STRAGGLER_PROBE_RING_CAPACITY");
  EXPECT_EQ(rc, SP_ERR_INVALID);
  EXPECT_EQ(sp_is_enabled(), 0);
  const std::string warning = sp_last_warning();
  EXPECT_NE(warning.find("STRAGGLER_PROBE_RING_CAPACITY='abc'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("stays off"), std::string::npos) << warning;
  start();  // a good configuration afterwards works
}

TEST_F(CApi, EnableZeroKeepsTheProbeOff) {
  setenv("STRAGGLER_PROBE_ENABLE", "0", 1);
  const sp_config cfg = test_config();
  const int rc = sp_init(&cfg);
  unsetenv("STRAGGLER_PROBE_ENABLE");
  EXPECT_EQ(rc, SP_ERR_DISABLED);
  EXPECT_EQ(sp_is_enabled(), 0);
}

TEST_F(CApi, RestartWithAnotherConfigurationStartsFromZero) {
  start();
  sp_event e = event_now();
  ASSERT_EQ(sp_record(&e), SP_OK);
  ASSERT_EQ(sp_shutdown(), SP_OK);
  start([](sp_config& c) { c.queue_steps = 1; });
  EXPECT_EQ(stats().events_recorded, 0u);
  ASSERT_EQ(sp_record(&e), SP_OK);
  EXPECT_EQ(stats().events_recorded, 1u);
}

// Failures that take the probe down for good run in a child process (gtest death tests), so
// that the rest of this process keeps a working probe.
class CApiFailure : public CApi {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Exits 0 when every check passed, else the number of the first failed check.
[[noreturn]] void exit_with(int failed_check) { std::_Exit(failed_check); }

TEST_F(CApiFailure, InternalFailureStepsAsideForGoodWithOneWarning) {
  EXPECT_EXIT(
      {
        const sp_config cfg = test_config();
        if (sp_init(&cfg) != SP_OK) exit_with(1);
        step_aside("test", "injected failure");
        if (sp_is_enabled() != 0) exit_with(2);
        sp_event e = event_now();
        if (sp_record(&e) != SP_ERR_DISABLED) exit_with(3);
        if (std::string(sp_last_warning()).find("injected failure") == std::string::npos) exit_with(4);
        if (sp_init(&cfg) != SP_ERR_DISABLED) exit_with(5);  // sticky: no second chance
        if (sp_shutdown() != SP_OK) exit_with(6);            // still stops its thread cleanly
        exit_with(0);
      },
      ::testing::ExitedWithCode(0), "steps aside");
}

TEST_F(CApiFailure, StuckSummaryCallbackMakesShutdownGiveUpAndStayOff) {
  EXPECT_EXIT(
      {
        std::atomic<bool> release{false};
        set_summary_callback([&](const StepSummary&) {
          while (!release.load()) std::this_thread::sleep_for(10ms);
        });
        const sp_config cfg = test_config();
        if (sp_init(&cfg) != SP_OK) exit_with(1);
        sp_mark_step(0);
        sp_flush();
        std::this_thread::sleep_for(100ms);  // the consumer is now inside the callback
        const auto t0 = std::chrono::steady_clock::now();
        sp_shutdown();  // must come back (after its timeout), not hang with the consumer
        if (std::chrono::steady_clock::now() - t0 > 10s) exit_with(2);
        if (sp_init(&cfg) != SP_ERR_DISABLED) exit_with(3);
        release = true;
        exit_with(0);
      },
      ::testing::ExitedWithCode(0), "did not stop");
}

// Exit codes of the child, so that the parent can tell what failed.
enum ChildResult { kChildOk = 0, kStillEnabled = 10, kRecorded, kRegionToken, kReinit, kMarked };

TEST_F(CApi, ForkedChildIsDisabledForGood) {
  start();
  const uint64_t token = sp_region_begin(SP_OP_DATA_WAIT, -1, 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Data-loader worker: nothing may record, start threads or wait on inherited locks.
    int code = kChildOk;
    sp_event e = event_now();
    if (sp_is_enabled() != 0) code = kStillEnabled;
    else if (sp_record(&e) != SP_ERR_DISABLED) code = kRecorded;
    else if (sp_region_begin(SP_OP_FORWARD, 0, 0) != 0) code = kRegionToken;
    else if (sp_init(nullptr) != SP_ERR_DISABLED) code = kReinit;
    else if (sp_mark_step(1) != SP_ERR_DISABLED || sp_region_end(token) != SP_ERR_DISABLED) code = kMarked;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kChildOk);
  // The parent keeps recording.
  EXPECT_EQ(sp_is_enabled(), 1);
  EXPECT_EQ(sp_region_end(token), SP_OK);
}

}  // namespace
}  // namespace sp::runtime::testing
