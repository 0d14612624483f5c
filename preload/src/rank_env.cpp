#include "straggler_probe/preload/rank_env.h"

#include <cerrno>
#include <cstdlib>

namespace sp::preload {
namespace {

// Parses a non-negative int; false (and names it in *error) when malformed.
bool parse_int(GetenvFn env, const char* name, int32_t* out, std::string* error) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < 0 || x > 1 << 24) {
    if (error->empty()) *error = std::string(name) + "='" + v + "' is not a rank number";
    return false;
  }
  *out = static_cast<int32_t>(x);
  return true;
}

}  // namespace

RankEnv read_rank_env(GetenvFn env) {
  RankEnv r;
  struct Names {
    const char* rank;
    const char* world;
    const char* local;
    const char* label;
  };
  static constexpr Names kLaunchers[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_*"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_*"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_*"},
  };
  for (const Names& n : kLaunchers) {
    int32_t rank = -1, world = -1, local = -1;
    const bool has_rank = parse_int(env, n.rank, &rank, &r.error);
    const bool has_world = parse_int(env, n.world, &world, &r.error);
    if (!has_rank || !has_world) continue;
    if (rank >= world) {
      if (r.error.empty()) {
        r.error = std::string(n.rank) + "=" + std::to_string(rank) + " is not below " + n.world +
                  "=" + std::to_string(world);
      }
      continue;
    }
    parse_int(env, n.local, &local, &r.error);
    r.is_rank = true;
    r.rank = rank;
    r.world_size = world;
    r.local_rank = local;
    r.source = n.label;
    return r;
  }
  return r;
}

RankEnv read_rank_env() { return read_rank_env([](const char* n) -> const char* { return std::getenv(n); }); }

}  // namespace sp::preload
