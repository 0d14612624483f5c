// Who this process is, from the launcher's environment.
//
// torchrun / torch.distributed set RANK, WORLD_SIZE, LOCAL_RANK; MPI and Slurm launchers set their
// own names, read as fallbacks. A process without a rank (the torchrun agent itself, a data-loader
// worker started with spawn, any unrelated program that inherited LD_PRELOAD) is "not a rank":
// the probe stays silent there and records nothing.
#pragma once

#include <cstdint>
#include <string>

namespace sp::preload {

struct RankEnv {
  bool is_rank = false;
  int32_t rank = -1;
  int32_t world_size = -1;
  int32_t local_rank = -1;
  std::string source;  // which variables answered ("RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", ...)
  std::string error;   // a malformed value, named (empty if none)
};

// Reads the environment through `getenv_fn` (tests pass their own).
using GetenvFn = const char* (*)(const char* name);
RankEnv read_rank_env(GetenvFn getenv_fn);
RankEnv read_rank_env();

}  // namespace sp::preload
