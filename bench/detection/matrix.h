// The detection benchmark's scenario matrix on the noisy synthetic job: job sizes x shapes
// (data-parallel, data x pipeline parallel) x scenarios, each a NoisyScenario with a name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "noisy_job.h"

namespace sp::bench::detection {

struct MatrixOptions {
  std::vector<int> sizes = {4, 64, 512, 4096};
  std::vector<int> steps = {200, 120, 80, 40};  // per size (the last one repeats)
  double jitter = 0.03;                       // compute sigma of the fault scenarios
  std::vector<double> clean_jitters = {0.01, 0.03, 0.05};
  std::vector<std::string> scenarios;         // empty: all of them
  std::vector<std::string> shapes = {"dp", "pp"};
  uint64_t seed = 1;
  int warmup = 5;                             // first steps not scored
  int onset = 8;                              // first step of every fault
  bool full = false;                          // clean runs of 1000 steps, nothing else
  int full_steps = 1000;
  bool cpu_times = false;                     // summaries carry CPU times (NoisyScenario::cpu_times)
};

struct Cell {
  std::string name;       // e.g. "dp512/slow-10"
  std::string shape;      // "dp512" or "dp128xpp4"
  std::string scenario;   // e.g. "slow-10", "clean-j3"
  std::string twin;       // the clean cell with the same seed and noise ("" for a clean cell)
  int ranks = 0;
  double jitter = 0;
  online::testing::NoisyScenario job;
};

// Every scenario name the matrix runs by default, in table order. Asked for by name only
// (--scenarios): `slow-4-shift`, a rank 4% slow under noise that moves work between each
// micro-batch's forward and backward, with its clean twin `clean-shift` (matrix.cpp).
const std::vector<std::string>& scenario_names();
// The cells the options select, clean cells first within each shape (their verdicts are the
// twins of the fault cells). Throws std::invalid_argument naming an unknown scenario or shape.
std::vector<Cell> build_matrix(const MatrixOptions& options);

}  // namespace sp::bench::detection
