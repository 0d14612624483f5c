// sp_detection_bench: the detection-quality benchmark (issue 10).
//   sp_detection_bench run [--sizes 4,64 --steps 60,40 ...] --out DIR   the synthetic matrix
//   sp_detection_bench score DIR...                                      cells run elsewhere
// Both print the per-cell table and the confusion matrix (Markdown); see README.md.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "cell_io.h"
#include "matrix.h"
#include "run_cell.h"
#include "score.h"
#include "tables.h"

namespace fs = std::filesystem;
using namespace sp::bench::detection;

namespace {

// The shared lock of timing-sensitive work on this machine, held for one cell at a time so that
// others can run between cells ("" = none).
class HeavyLock {
 public:
  explicit HeavyLock(const std::string& path) {
    if (path.empty()) return;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw std::runtime_error(path + ": cannot take the lock");
  }
  ~HeavyLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  HeavyLock(const HeavyLock&) = delete;
  HeavyLock& operator=(const HeavyLock&) = delete;

 private:
  int fd_ = -1;
};

CellScore score_dir(const std::string& dir) {
  const CellInfo info = read_cell_info(dir);
  const CellOutputs out = read_outputs(dir, info);
  std::vector<VerdictStep> twin;
  const bool has_twin = !info.twin.empty() && fs::exists(dir + "/" + info.twin + "/cell.json");
  if (has_twin) twin = read_outputs(dir + "/" + info.twin, read_cell_info(dir + "/" + info.twin)).verdicts;
  return score_cell(info, read_truth(dir), out, has_twin ? &twin : nullptr);
}

std::string report(const std::string& title, const std::vector<CellScore>& scores) {
  std::ostringstream o;
  o << "## " << title << "\n\n"
    << score_table(scores) << "\nConfusion matrix (steps; true cause x named cause):\n\n"
    << confusion_table(scores) << '\n' << table_legend();
  return o.str();
}

void emit(const std::string& text, const std::string& markdown_path) {
  std::cout << text << std::flush;
  if (markdown_path.empty()) return;
  std::ofstream f(markdown_path, std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error(markdown_path + ": cannot write");
}

int run_matrix(const MatrixOptions& o, const std::string& out, const std::string& markdown,
               const std::string& lock) {
  const std::vector<Cell> cells = build_matrix(o);
  std::vector<CellScore> scores;
  for (const Cell& c : cells) {
    const std::string dir = out + "/" + c.name;
    CellRun r;
    {
      const HeavyLock held(lock);
      r = run_cell(c, dir, o.warmup);
    }
    std::fprintf(stderr, "%-32s %5d ranks %5d steps: generate %.1f s, analyse %.1f s%s%s\n", c.name.c_str(), c.ranks,
                 c.job.steps, r.generate_s, r.analyze_s, r.steps_skipped ? " SKIPPED STEPS: " : "",
                 r.steps_skipped ? r.last_error.c_str() : "");
    scores.push_back(score_dir(dir));
  }
  char title[160];
  std::snprintf(title, sizeof title, "Synthetic jobs (seed %llu, fault jitter %.0f%%, warm-up %d, onset %d)",
                static_cast<unsigned long long>(o.seed), 100 * o.jitter, o.warmup, o.onset);
  emit(report(title, scores), markdown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Detection quality of the online analysis on noisy synthetic jobs and recorded cells"};
  app.require_subcommand(1);
  MatrixOptions o;
  std::string out = "detection-out", markdown, lock;
  CLI::App* run = app.add_subcommand("run", "run the synthetic scenario matrix, then score it");
  run->add_option("--out", out, "folder for the cells (replaced cell by cell)");
  run->add_option("--sizes", o.sizes, "job sizes in ranks")->delimiter(',');
  run->add_option("--steps", o.steps, "steps per size (the last repeats for further sizes)")->delimiter(',');
  run->add_option("--jitter", o.jitter, "compute jitter (log-normal sigma) of the fault scenarios");
  run->add_option("--clean-jitters", o.clean_jitters, "jitters of the clean runs")->delimiter(',');
  run->add_option("--scenarios", o.scenarios, "fault scenarios (default: all)")->delimiter(',');
  run->add_option("--shapes", o.shapes, "dp and/or pp")->delimiter(',');
  run->add_option("--seed", o.seed, "seed of noise, culprits and pauses");
  run->add_option("--warmup", o.warmup, "first steps not scored");
  run->add_option("--onset", o.onset, "first step of every fault");
  run->add_flag("--full", o.full, "clean runs only, --full-steps steps each (no alarm in 1000 steps)");
  run->add_option("--full-steps", o.full_steps, "steps of a --full clean run");
  run->add_flag("--cpu-times", o.cpu_times, "summaries carry each rank's CPU time (the CPU work test runs)");
  run->add_option("--markdown", markdown, "also write the tables to this file");
  run->add_option("--lock", lock, "hold this flock file while a cell runs (e.g. /tmp/sp-heavy.lock)");
  std::vector<std::string> dirs;
  std::string title = "Recorded cells";
  CLI::App* score = app.add_subcommand("score", "score cells written by another driver (real_jobs.py)");
  score->add_option("dirs", dirs, "cell folders (cell.json, truth.jsonl, the analyzer's outputs)")->required();
  score->add_option("--title", title, "heading of the tables");
  score->add_option("--markdown", markdown, "also write the tables to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*run) return run_matrix(o, out, markdown, lock);
    std::vector<CellScore> scores;
    for (const std::string& d : dirs) scores.push_back(score_dir(d));
    emit(report(title, scores), markdown);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sp_detection_bench: %s\n", e.what());
    return 1;
  }
}
