// Training steps from an NVTX range (STRAGGLER_PROBE_STEP_NVTX): nvtx_program (NVTX + the fake
// NCCL, knowing nothing of the probe) runs under the real libstraggler_probe.so as a rank without
// Python, and its per-rank summary file says where the steps ended. Also the pure pieces (the
// variable's value, name matching) and torch.cuda.nvtx in a Python process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "straggler_probe/preload/nvtx_steps.h"
#include "straggler_probe/step_summary.h"
#include "summary_file_reader.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using sp::preload::NvtxStepRange;
using sp::runtime::testing::slurp;

constexpr size_t kSteps = 12;  // nvtx_program.cpp

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Paths of this build (tests/preload/CMakeLists.txt).
const std::string kProgram = SP_NVTX_PROGRAM;
const std::string kProbeLib = SP_PROBE_LIB;
const std::string kWorkDir = SP_TEST_WORK_DIR;
const std::string kPython = SP_TEST_PYTHON;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

struct ProgramRun {
  int exit_code = -1;
  std::string out, err;
  std::vector<sp::runtime::StepSummary> steps;  // from <dir>/rank0.spsum (empty if none)
};

// Runs argv with only PATH, HOME and `vars` in its environment (the test's own LD_PRELOAD, RANK,
// NVTX_INJECTION64_PATH, ... must not leak in), stdout and stderr to files.
ProgramRun run(const std::string& name, std::vector<std::string> argv,
        std::map<std::string, std::string> vars, bool preload = true) {
  const fs::path dir = fs::path(kWorkDir) / ("nvtx_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  vars["PATH"] = env_or_empty("PATH");
  vars["HOME"] = env_or_empty("HOME");
  vars["STRAGGLER_PROBE_OUT_DIR"] = (dir / "out").string();
  vars["STRAGGLER_PROBE_STEP_GRACE_MS"] = "0";
  if (preload) vars["LD_PRELOAD"] = kProbeLib;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  ProgramRun r;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
  if (rc != 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  const fs::path summaries = dir / "out" / "rank0.spsum";
  if (fs::exists(summaries)) r.steps = sp::runtime::testing::read_summary_file(summaries);
  return r;
}

ProgramRun run_program(const std::string& name, std::map<std::string, std::string> vars,
                const std::string& mode = "") {
  std::vector<std::string> argv{kProgram};
  if (!mode.empty()) argv.push_back(mode);
  return run(name, argv, std::move(vars));
}

std::map<std::string, std::string> rank_env() { return {{"RANK", "0"}, {"WORLD_SIZE", "1"}}; }

// Steps that hold operations, checked to be exactly one NVTX step each: all-reduce 256 B,
// broadcast 64 B, all-reduce 128 B.
size_t check_nvtx_steps(const ProgramRun& r) {
  size_t with_ops = 0;
  int64_t last = -1;
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.rank, 0);
    EXPECT_GT(s.step, last) << "steps in order, each once";
    last = s.step;
    std::vector<std::pair<uint32_t, uint64_t>> ops;
    for (const auto& op : s.ops) {
      if (op.kind == SP_OP_COLLECTIVE) ops.emplace_back(op.coll, op.bytes);
    }
    if (ops.empty()) continue;  // a step closed at exit after the last range holds nothing
    ++with_ops;
    EXPECT_LT(s.step, static_cast<int64_t>(kSteps));
    const std::vector<std::pair<uint32_t, uint64_t>> expected{
        {SP_COLL_ALL_REDUCE, 256}, {SP_COLL_BROADCAST, 64}, {SP_COLL_ALL_REDUCE, 128}};
    EXPECT_EQ(ops, expected) << "step " << s.step << " is exactly one train_step range";
  }
  return with_ops;
}

// ---- pure pieces -----------------------------------------------------------------------------

TEST(NvtxStepRange, ParsesExactAndPrefixNames) {
  NvtxStepRange r;
  std::string error;
  ASSERT_TRUE(sp::preload::parse_nvtx_step_range("train_step", &r, &error));
  EXPECT_EQ(std::string(r.name), "train_step");
  EXPECT_FALSE(r.prefix);
  EXPECT_TRUE(sp::preload::nvtx_range_matches(r, "train_step"));
  EXPECT_TRUE(sp::preload::nvtx_range_matches(r, L"train_step"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, "train_step_inner"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, "train_ste"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, L"train_stép"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, static_cast<const char*>(nullptr)));

  ASSERT_TRUE(sp::preload::parse_nvtx_step_range("step*", &r, &error));
  EXPECT_TRUE(r.prefix);
  EXPECT_TRUE(sp::preload::nvtx_range_matches(r, "step"));
  EXPECT_TRUE(sp::preload::nvtx_range_matches(r, "step 17"));
  EXPECT_TRUE(sp::preload::nvtx_range_matches(r, L"step 17"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, "ste"));
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, "a step"));
}

TEST(NvtxStepRange, UnsetIsOffAndBadValuesAreNamed) {
  NvtxStepRange r;
  std::string error;
  ASSERT_TRUE(sp::preload::parse_nvtx_step_range(nullptr, &r, &error));
  EXPECT_EQ(r.length, 0u);
  EXPECT_FALSE(sp::preload::nvtx_range_matches(r, ""));
  ASSERT_TRUE(sp::preload::parse_nvtx_step_range("", &r, &error));
  EXPECT_EQ(r.length, 0u);
  EXPECT_FALSE(sp::preload::parse_nvtx_step_range("*", &r, &error));
  EXPECT_NE(error.find("STRAGGLER_PROBE_STEP_NVTX"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(sp::preload::parse_nvtx_step_range(std::string(300, 'x').c_str(), &r, &error));
  EXPECT_NE(error.find("longer than"), std::string::npos) << error;
}

// ---- the real library in an unmodified program ------------------------------------------------

TEST(NvtxSteps, EachTrainStepRangeIsOneStep) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train_step";
  const ProgramRun r = run_program("ranges", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nvtx program ok"), std::string::npos);
  EXPECT_NE(r.out.find("NVTX_INJECTION64_PATH=/"), std::string::npos)
      << "the library registered itself (absolute path) before the first NVTX call: " << r.out;
  EXPECT_EQ(count(r.err, "warning"), 0u) << r.err;
  // A step may be skipped by design when the writer falls behind; none may be merged or split.
  const size_t steps = check_nvtx_steps(r);
  EXPECT_GE(steps, kSteps - 2);
  EXPECT_LE(steps, kSteps);
}

TEST(NvtxSteps, NameWithTrailingStarMatchesByPrefix) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train*";  // also train_step_inner, nested: no extra step
  const ProgramRun r = run_program("prefix", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t steps = check_nvtx_steps(r);
  EXPECT_GE(steps, kSteps - 2);
  EXPECT_LE(steps, kSteps);
}

TEST(NvtxSteps, AMarkWithTheNameEndsAStep) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "step_end";
  const ProgramRun r = run_program("marks", vars, "marks");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t steps = check_nvtx_steps(r);
  EXPECT_GE(steps, kSteps - 2);
  EXPECT_LE(steps, kSteps);
}

TEST(NvtxSteps, TheApplicationsOwnMarksWinWithOneWarning) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train_step";
  const ProgramRun r = run_program("app_marks", vars, "app_marks");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "[straggler_probe] warning"), 1u) << r.err;
  EXPECT_NE(r.err.find("the application marks the steps itself"), std::string::npos) << r.err;
  // The application marks at the start of each iteration: NVTX stood down at its first step end
  // (the runtime's label was already the application's), so no step is split or merged.
  const size_t steps = check_nvtx_steps(r);
  EXPECT_GE(steps, kSteps - 3);
}

TEST(NvtxSteps, WithoutTheVariableNvtxMarksNothing) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_MARKER"] = "off";  // nor does the operation sequence
  const ProgramRun r = run_program("unset", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVTX_INJECTION64_PATH=(unset)"), std::string::npos) << r.out;
  EXPECT_EQ(count(r.err, "warning"), 0u) << r.err;
  // At most the whole run as one step (closed at exit).
  EXPECT_LE(r.steps.size(), 1u);
}

TEST(NvtxSteps, TheOperationMarkerIsIgnoredWithOneWarning) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train_step";
  vars["STRAGGLER_PROBE_STEP_MARKER"] = "every:1";
  const ProgramRun r = run_program("conflict", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "[straggler_probe] warning"), 1u) << r.err;
  EXPECT_NE(r.err.find("STRAGGLER_PROBE_STEP_MARKER=every:1"), std::string::npos) << r.err;
  const size_t steps = check_nvtx_steps(r);  // NVTX wins: three operations a step, not one
  EXPECT_GE(steps, kSteps - 2);
}

TEST(NvtxSteps, AnotherNvtxToolIsLeftAloneWithOneWarning) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train_step";
  vars["STRAGGLER_PROBE_STEP_MARKER"] = "off";
  vars["NVTX_INJECTION64_PATH"] = "/opt/nsight-systems/libToolsInjection64.so";
  const ProgramRun r = run_program("foreign", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVTX_INJECTION64_PATH=/opt/nsight-systems/libToolsInjection64.so"),
            std::string::npos)
      << "not overridden: " << r.out;
  EXPECT_EQ(count(r.err, "[straggler_probe] warning"), 1u) << r.err;
  EXPECT_NE(r.err.find("NVTX step ranges are unavailable"), std::string::npos) << r.err;
  EXPECT_LE(r.steps.size(), 1u);
}

TEST(NvtxSteps, ABadValueIsOneWarning) {
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "*";
  vars["STRAGGLER_PROBE_STEP_MARKER"] = "off";
  const ProgramRun r = run_program("bad_value", vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.err, "[straggler_probe] warning"), 1u) << r.err;
  EXPECT_NE(r.err.find("STRAGGLER_PROBE_STEP_NVTX='*'"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("NVTX_INJECTION64_PATH=(unset)"), std::string::npos) << r.out;
}

TEST(NvtxSteps, SilentInAProcessThatIsNotARank) {
  const ProgramRun r = run_program("not_a_rank", {{"STRAGGLER_PROBE_STEP_NVTX", "train_step"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("[straggler_probe]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("NVTX_INJECTION64_PATH=(unset)"), std::string::npos) << r.out;
  EXPECT_TRUE(r.steps.empty());
}

// torch.cuda.nvtx (libtorch's NVTX v3, no GPU needed) in a Python rank without the package.
// A Python process writes no summary file (the package would drain the steps): the script asks
// the preloaded runtime for the last marked step instead.
TEST(NvtxSteps, TorchCudaNvtxRangesAreSteps) {
  const std::string& python = kPython;
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no Python at " << python;
  const char* script =
      "import ctypes, time, torch\n"
      "probe = ctypes.CDLL(None)\n"
      "probe.sp_last_marked_step.restype = ctypes.c_int64\n"
      "for i in range(8):\n"
      "    torch.cuda.nvtx.range_push('train_step')\n"
      "    torch.cuda.nvtx.range_push('forward')\n"
      "    torch.cuda.nvtx.range_pop()\n"
      "    torch.cuda.nvtx.range_pop()\n"
      "    time.sleep(0.003)\n"
      "print('last marked step', probe.sp_last_marked_step())\n";
  auto vars = rank_env();
  vars["STRAGGLER_PROBE_STEP_NVTX"] = "train_step";
  vars["STRAGGLER_PROBE_PYTHON_AUTOLOAD"] = "0";  // a plain Python rank: only NVTX marks steps
  const ProgramRun probe = run("torch_probe", {python, "-c", "import torch"}, {}, false);
  if (probe.exit_code != 0) GTEST_SKIP() << "torch is not importable: " << probe.err;
  const ProgramRun r = run("torch", {python, "-c", script}, vars);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("last marked step 7\n"), std::string::npos) << r.out << r.err;
}

}  // namespace
