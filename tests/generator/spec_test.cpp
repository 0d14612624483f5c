// The generator's contract beyond the schedule: determinism per seed, planted factors,
// rank numbering, spec validation, and files the loader reads back unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "straggler_probe/whatif/synthetic_trace.h"
#include "straggler_probe/whatif/trace_loader.h"
#include "../whatif_io/trace_table_expect.h"

namespace sp::whatif {
namespace {

SyntheticJobSpec small_spec() {
  SyntheticJobSpec spec;
  spec.dp_size = 2;
  spec.pp_size = 4;
  spec.micro_batches = 8;
  spec.steps = 3;
  spec.seqlen_sigma = 0.2;
  return spec;
}

TEST(Generator, SameSeedSameTraceOtherSeedOtherTimes) {
  const auto a = generate_synthetic_trace(small_spec());
  const auto b = generate_synthetic_trace(small_spec());
  testing::expect_same_table(a.table, b.table);
  SyntheticJobSpec other = small_spec();
  other.seed = 2;
  const auto c = generate_synthetic_trace(other);
  // Same operations (their order may differ where the two streams of a worker race)...
  auto sorted_types = [](std::vector<OpType> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted_types(c.table.optype), sorted_types(a.table.optype));
  EXPECT_NE(c.table.duration, a.table.duration);  // ...other durations
}

// Mean forward compute of a worker, to see the planted factors.
double mean_forward(const TraceTable& t, int dp, int stage) {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.optype[i] == OpType::kForwardCompute && t.dp_rank[i] == dp && t.stage[i] == stage) {
      sum += t.duration[i];
      ++n;
    }
  }
  return sum / n;
}

TEST(Generator, PlantedFactorsScaleTheComputeOfTheirWorkers) {
  SyntheticJobSpec spec = small_spec();
  spec.seqlen_sigma = 0;
  spec.slow_workers.push_back({1, 2, 1.3});
  spec.slow_stages.push_back({3, 1.5});
  const auto t = generate_synthetic_trace(spec).table;
  const double base = mean_forward(t, 0, 0);
  EXPECT_NEAR(base, spec.forward_s, 0.05 * spec.forward_s);
  EXPECT_NEAR(mean_forward(t, 1, 2) / base, 1.3, 0.05);
  EXPECT_NEAR(mean_forward(t, 0, 2) / base, 1.0, 0.05);
  EXPECT_NEAR(mean_forward(t, 0, 3) / base, 1.5, 0.05);
  EXPECT_NEAR(mean_forward(t, 1, 3) / base, 1.5, 0.05);
}

TEST(Generator, RanksFollowMegatronOrderWithOneTracedRankPerGroup) {
  SyntheticJobSpec spec = small_spec();
  spec.tp_size = 2;
  spec.dsp_size = 2;
  const auto trace = generate_synthetic_trace(spec);
  EXPECT_EQ(trace.meta.world_size, 2 * 4 * 2 * 2);
  const TraceTable& t = trace.table;
  for (size_t i = 0; i < t.size(); ++i) {
    ASSERT_EQ(t.rank[i], t.stage[i] * 2 * 4 + t.dp_rank[i] * 4);
  }
}

// Rendezvous semantics make a wrongly ordered schedule deadlock (the generator then throws);
// sweep the shapes the schedule code distinguishes.
TEST(Generator, EveryPipelineShapeRunsToTheEnd) {
  for (int pp = 1; pp <= 8; ++pp) {
    for (int vpp = 1; vpp <= (pp > 1 ? 4 : 1); ++vpp) {
      for (int mb = 1; mb <= 3 * pp; ++mb) {
        if (vpp > 1 && mb % pp != 0) continue;
        SyntheticJobSpec spec;
        spec.dp_size = 1;
        spec.dsp_size = 2;
        spec.pp_size = pp;
        spec.vpp_size = vpp;
        spec.micro_batches = mb;
        spec.steps = 1;
        spec.overlap_grad_reduce = mb % 2 == 0;
        EXPECT_NO_THROW(generate_synthetic_trace(spec))
            << "pp=" << pp << " vpp=" << vpp << " mb=" << mb;
      }
    }
  }
}

TEST(Generator, RejectsSpecsThatAreNotAJob) {
  auto rejects = [](auto&& edit) {
    SyntheticJobSpec spec = small_spec();
    edit(spec);
    EXPECT_THROW(generate_synthetic_trace(spec), std::invalid_argument);
  };
  rejects([](SyntheticJobSpec& s) { s.dp_size = 0; });
  rejects([](SyntheticJobSpec& s) { s.micro_batches = 0; });
  rejects([](SyntheticJobSpec& s) { s.vpp_size = 2; s.micro_batches = 6; });  // 6 % pp(4) != 0
  rejects([](SyntheticJobSpec& s) { s.vpp_size = 2; s.pp_size = 1; });
  rejects([](SyntheticJobSpec& s) { s.slow_workers.push_back({2, 0, 1.5}); });  // dp out of range
  rejects([](SyntheticJobSpec& s) { s.slow_stages.push_back({0, -1.0}); });
  rejects([](SyntheticJobSpec& s) { s.compute_noise = -0.1; });
  rejects([](SyntheticJobSpec& s) { s.gc_probability = 2; });
  rejects([](SyntheticJobSpec& s) { s.trial_name = "a\nb"; });
}

TEST(Generator, WrittenFilesLoadBackUnchanged) {
  SyntheticJobSpec spec = small_spec();
  spec.vpp_size = 2;
  spec.dsp_size = 2;
  spec.overlap_grad_reduce = true;
  const auto trace = generate_synthetic_trace(spec);
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "generator_io";
  std::filesystem::create_directories(dir);
  for (const char* name : {"trace.csv", "trace.csv.gz"}) {
    const std::string trace_path = (dir / name).string();
    const std::string meta_path = (dir / "meta.yaml").string();
    write_trace_csv(trace.table, trace_path);
    write_meta_yaml(trace.meta, meta_path);
    const JobMeta meta = load_meta(meta_path);
    EXPECT_EQ(meta.dp_size, 2);
    EXPECT_EQ(meta.vpp_size, 2);
    EXPECT_EQ(meta.dsp_size, 2);
    EXPECT_EQ(meta.world_size, trace.meta.world_size);
    testing::expect_same_table(load_trace_csv(trace_path, meta), trace.table);
  }
  EXPECT_LT(std::filesystem::file_size(dir / "trace.csv.gz"),
            std::filesystem::file_size(dir / "trace.csv") / 2);
}

TEST(Generator, UnwritablePathIsAnErrorNamingIt) {
  const auto trace = generate_synthetic_trace(small_spec());
  try {
    write_trace_csv(trace.table, "/nonexistent-dir/t.csv.gz");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/t.csv.gz"), std::string::npos);
  }
}

}  // namespace
}  // namespace sp::whatif
