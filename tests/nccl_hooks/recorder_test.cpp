// The interposer's recorder driven from several threads at once (DDP's reducer launches NCCL
// calls from autograd threads while the training thread launches others): no lock is taken per
// operation, yet every operation is recorded exactly once, and the step detector sees all
// threads' operations in one order, so every step holds exactly the detector's number of them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "fake_runtime.h"
#include "interposer/interposer_recorder.h"

namespace sp::nccl {
namespace {

std::vector<sp_event> recorded() { return sp_test_recorded(); }

TEST(InterposerRecorder, ConcurrentThreadsAreRecordedOnceEachInOneOrder) {
  // Read at the recorder's first call: a rank whose steps end every 4 operations.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("STRAGGLER_PROBE_STEP_MARKER", "every:4", 1);
  InterposerRecorder& rec = InterposerRecorder::instance();
  rec.reset_for_tests();
  sp_test_clear();
  auto* comm = reinterpret_cast<ncclComm_t>(uintptr_t{0xc0});
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rec, comm, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        InterposerRecorder::Call call =
            rec.begin_op(SP_COLL_ALL_REDUCE, comm, 16 + t, static_cast<ncclDataType_t>(7), -1, -1,
                         nullptr);
        rec.end_op(call, ncclSuccess);
      }
    });
  }
  for (auto& th : threads) th.join();

  const auto ev = recorded();
  ASSERT_EQ(ev.size(), static_cast<size_t>(kThreads * kOpsPerThread));
  std::set<uint64_t> seqs;
  std::map<int64_t, int> per_step;
  for (const auto& e : ev) {
    seqs.insert(e.seq);
    ASSERT_NE(e.step_plus_one, 0u) << "every operation is pinned to a step";
    ++per_step[static_cast<int64_t>(e.step_plus_one) - 1];
  }
  EXPECT_EQ(seqs.size(), ev.size()) << "each operation once";
  EXPECT_EQ(*seqs.rbegin(), ev.size() - 1);
  std::vector<int64_t> marks(sp_test_marks(nullptr, 0));
  sp_test_marks(marks.data(), marks.size());
  ASSERT_EQ(marks.size(), ev.size() / 4);
  for (size_t i = 0; i < marks.size(); ++i) ASSERT_EQ(marks[i], static_cast<int64_t>(i));
  for (const auto& [step, n] : per_step) EXPECT_EQ(n, 4) << "step " << step;
  EXPECT_EQ(rec.stats().out_of_order, 0u);
  EXPECT_EQ(rec.stats().steps_marked, marks.size());
}

}  // namespace
}  // namespace sp::nccl
