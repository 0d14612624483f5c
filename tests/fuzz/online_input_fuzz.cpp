// What rank 0's analysis (online/) reads of another rank's summary once the codec accepted it:
// the sequence-length annotations, and the whole step model built from a step in which one rank's
// summary is a mutation (decoded, so only what the codec lets through): every step is analysed
// or skipped with one reason, and no log line carries the input's bytes.
#include <gtest/gtest.h>

#include <cmath>

#include "fuzz_engine.h"
#include "model/model_input.h"
#include "straggler_probe/online/analyzer.h"
#include "summary_seeds.h"
#include "synthetic_job.h"

namespace sp::online {
namespace {

using fuzz::Outcome;
using fuzz::Stats;

TEST(FuzzOnlineInput, SequenceLengthAnnotations) {
  fuzz::Corpus c;
  c.seeds = {"512,1024,77", "[3, 4]", "0", "9223372036854775807,1"};
  c.dictionary = {",", "[", "]", " ", "-", "9223372036854775808", "1e5", "0x1"};
  const Stats st = fuzz::run_cases("seq_lens annotation values", c, fuzz::case_count(),
                                   [](const std::string& text) {
    double sum = -1, sum_sq = -1;
    Outcome o;
    o.accepted = parse_seq_lens(text, &sum, &sum_sq);
    o.quiet = true;  // false: the annotation is not used
    if (o.accepted) {
      EXPECT_TRUE(std::isfinite(sum) && std::isfinite(sum_sq) && sum >= 0 && sum_sq >= 0);
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// One analyzer over a run of a job's steps; each case replaces one rank's summary of a step
// with a mutation of an encoded summary and hands the whole step over, as rank 0's worker does.
class MutatedStep {
 public:
  explicit MutatedStep(const testing::SyntheticJob& job) : run_(testing::run_synthetic(job, 6)) {
    for (const auto& step : run_.steps) {
      for (const auto& s : step) seeds_.push_back(runtime::encode_summary(s));
    }
    OnlineConfig cfg;
    cfg.world_size = static_cast<int>(run_.steps[0].size());
    cfg.recap_interval = 0;
    analyzer_ = std::make_unique<OnlineAnalyzer>(cfg);
  }

  fuzz::Corpus corpus() const {
    fuzz::Corpus c;
    c.seeds = seeds_;
    c.dictionary = fuzz::summary_dictionary();
    c.fixup = fuzz::fix_summary_checksum;
    c.every_truncation_up_to = 0;  // cuts are the codec fuzzer's; here what gets through
    return c;
  }

  Outcome operator()(const std::string& bytes) {
    Outcome o;
    runtime::StepSummary mutated;
    if (!runtime::decode_summary(bytes, &mutated, &o.error)) return o;
    const size_t world = run_.steps[0].size();
    const int64_t label = next_label_++;
    const size_t seed_step = static_cast<size_t>(label) % run_.steps.size();
    std::vector<runtime::StepSummary> by_rank = run_.steps[seed_step];
    for (auto& s : by_rank) s.step = label;
    const size_t r = mutated.rank >= 0 && static_cast<size_t>(mutated.rank) < world
                         ? static_cast<size_t>(mutated.rank) : 0;
    if (mutated.step >= 0 && mutated.step < static_cast<int64_t>(run_.steps.size())) mutated.step = label;
    by_rank[r] = std::move(mutated);
    for (const StepVerdict& v : analyzer_->add_step(label, std::move(by_rank))) {
      const std::string line = format_log_line(v);
      EXPECT_TRUE(fuzz::printable_ascii(line)) << "a log line prints input bytes raw";
      o.accepted = v.analyzed;
      if (!v.analyzed) o.error = v.skip_reason;
    }
    return o;
  }

  OnlineStats stats() const { return analyzer_->stats(); }

 private:
  testing::SyntheticRun run_;
  std::vector<std::string> seeds_;
  std::unique_ptr<OnlineAnalyzer> analyzer_;
  int64_t next_label_ = 0;
};

TEST(FuzzOnlineInput, DataParallelStepWithOneMutatedRank) {
  testing::SyntheticJob job;  // 4 dp ranks, 2 bucket all-reduces
  MutatedStep step(job);
  const Stats st = fuzz::run_cases("online analysis: dp step, one rank mutated", step.corpus(),
                                   fuzz::case_count(), std::ref(step));
  EXPECT_GT(st.accepted, 0u);
  EXPECT_EQ(step.stats().analysis_errors, 0u) << step.stats().last_error;
}

TEST(FuzzOnlineInput, PipelineStepWithOneMutatedRank) {
  testing::SyntheticJob job;
  job.dp = 2;
  job.pp = 2;
  job.microbatches = 2;
  job.seq_lens = true;
  MutatedStep step(job);
  const Stats st = fuzz::run_cases("online analysis: pipeline step, one rank mutated", step.corpus(),
                                   fuzz::case_count(), std::ref(step));
  EXPECT_GT(st.accepted, 0u);
  EXPECT_EQ(step.stats().analysis_errors, 0u) << step.stats().last_error;
}

}  // namespace
}  // namespace sp::online
