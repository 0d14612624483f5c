// The per-rank .spsum files (runtime/include/straggler_probe/summary_file.h framing, read by
// analyze-dir's cli/analyze_dir/summary_dir_reader.cpp): a directory of a 2-rank job whose rank 0 file is
// mutated (the records' checksums fixed up where a record is whole, so that mutations reach the
// summaries), indexed, and every indexed record loaded back. One BadInput line or a clean index,
// never a crash, and never a loop or allocation sized by a number read from the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/exit_codes.h"
#include "fuzz_engine.h"
#include "straggler_probe/summary_file.h"
#include "analyze_dir/summary_dir_reader.h"
#include "summary_seeds.h"
#include "synthetic_job.h"

namespace sp::fuzz {
namespace {

namespace fs = std::filesystem;
namespace summary_file = runtime::summary_file;

std::string record(const std::string& payload) {
  const auto prefix = summary_file::encode_length(static_cast<uint32_t>(payload.size()));
  return std::string(prefix.begin(), prefix.end()) + payload;
}

// Each whole record's summary gets its checksum fixed (a record is read by its length prefix).
void fix_records(std::string* file) {
  size_t at = 0;
  while (file->size() - at >= summary_file::kLengthBytes) {
    std::array<uint8_t, summary_file::kLengthBytes> prefix{};
    std::copy_n(file->begin() + static_cast<std::ptrdiff_t>(at), prefix.size(), prefix.begin());
    const uint32_t length = summary_file::decode_length(prefix);
    at += prefix.size();
    if (length > file->size() - at) return;
    std::string payload = file->substr(at, length);
    fix_summary_checksum(&payload);
    file->replace(at, length, payload);
    at += length;
  }
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

online::testing::SyntheticRun job_of(int ranks, int steps) {
  online::testing::SyntheticJob job;
  job.dp = ranks;
  return online::testing::run_synthetic(job, steps);
}

// A directory of a `world`-rank job's files; rank 0's is the one under test.
class SpsumDir {
 public:
  explicit SpsumDir(int world) : world_(world) {
    char tmpl[] = "/tmp/sp_fuzz_spsum.XXXXXX";
    const char* made = mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    dir_ = made != nullptr ? made : "/tmp";
    std::vector<std::string> files(static_cast<size_t>(world));
    for (const auto& step : job_of(world, 3).steps) {
      for (size_t r = 0; r < files.size(); ++r) files[r] += record(runtime::encode_summary(step[r]));
    }
    rank0_ = files[0];
    for (size_t r = 1; r < files.size(); ++r) write_file(dir_ / summary_file::file_name(static_cast<int32_t>(r)), files[r]);
  }
  ~SpsumDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  SpsumDir(const SpsumDir&) = delete;
  SpsumDir& operator=(const SpsumDir&) = delete;

  Corpus corpus() const {
    Corpus c;
    const std::string v1 = record(encoded_v1({job_of(world_, 1).steps[0][0]})[0]);
    c.seeds = {rank0_, record(runtime::encode_summary(seed_summaries()[1])), v1, ""};
    c.dictionary = summary_dictionary();
    c.dictionary.push_back(record(runtime::encode_summary(seed_summaries()[0])));
    c.fixup = fix_records;
    c.every_truncation_up_to = 0;
    return c;
  }

  Outcome operator()(const std::string& rank0_bytes) {
    write_file(dir_ / "rank0.spsum", rank0_bytes);
    Outcome o;
    try {
      const cli::SummaryDirIndex index = cli::index_summary_dir(dir_.string());
      for (const std::string& note : index.torn_tails) expect_clean_line(note, "a torn tail's note");
      EXPECT_GE(index.world_size, 1);
      EXPECT_EQ(index.ranks.size(), static_cast<size_t>(index.world_size));
      for (const int64_t step : index.all_steps()) {
        for (const auto& f : index.ranks) {
          if (!f.steps.count(step)) continue;
          const runtime::StepSummary s = index.load(f.rank, step);
          std::string error;
          runtime::StepSummary back;
          EXPECT_TRUE(decode_and_round_trip(runtime::encode_summary(s), &back, &error)) << error;
        }
      }
      o.accepted = true;
    } catch (const cli::BadInput& e) {
      o.error = e.what();
    }
    return o;
  }

 private:
  int world_;
  fs::path dir_;
  std::string rank0_;
};

TEST(FuzzSummaryFile, IndexedAndLoadedByAnalyzeDir) {
  SpsumDir dir(2);
  const Stats st = run_cases("spsum files (analyze-dir, 2 ranks)", dir.corpus(), case_count(), std::ref(dir));
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// Rank 0's file alone: nothing else in the directory to contradict its world size.
TEST(FuzzSummaryFile, ALoneRankFile) {
  SpsumDir dir(1);
  const Stats st = run_cases("spsum files (analyze-dir, 1 rank)", dir.corpus(), case_count(), std::ref(dir));
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzSummaryFile, FileNames) {
  Corpus c;
  c.seeds = {"rank0.spsum", "rank123456789.spsum", "rank.spsum"};
  c.dictionary = {"rank", ".spsum", "9", "-", "+"};
  const Stats st = run_cases("spsum file names", c, case_count(), [](const std::string& name) {
    Outcome o;
    const auto rank = summary_file::rank_of_file_name(name);
    o.accepted = rank.has_value();
    o.quiet = true;  // nullopt: the reader names the file
    if (rank) {
      EXPECT_GE(*rank, 0);
      EXPECT_EQ(summary_file::rank_of_file_name(summary_file::file_name(*rank)), rank);
    }
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

}  // namespace
}  // namespace sp::fuzz
