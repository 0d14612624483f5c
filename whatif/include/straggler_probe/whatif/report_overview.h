// The short overview for a person the CLI prints, and the one-line verdict behind it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sp::whatif {

// One attribution entry: the slowdown left when only this group keeps its real durations.
struct GroupSlowdown {
  std::string name;  // "3" for a dp rank or stage, "backward-compute" for an op type
  double slowdown = 1.0;
};

struct OverviewInput {
  std::string trial_name;
  size_t steps = 0;              // steps analysed
  double slowdown = 1.0;         // S
  double launch_slowdown = 1.0;  // effect of launch delays (not counted in S)
  int pp_size = 1;
  // Attributions (any order; empty when not computed because S was below the threshold).
  std::vector<GroupSlowdown> by_stage;
  std::vector<GroupSlowdown> by_dp_rank;
  std::vector<GroupSlowdown> by_optype;
  // The worst dp rank of each analysed step (from the per-step attribution), in step order;
  // empty when not computed. Whether it stays the same tells a slow machine from imbalance
  // that moves around.
  std::vector<std::string> per_step_worst_dp_rank;
  // The worst single worker by S_w, if known.
  std::optional<int> worst_worker_dp;
  std::optional<int> worst_worker_stage;
  std::optional<double> worst_worker_slowdown;
  std::optional<double> m_s;  // share of the slowdown explained by the last stage
  std::optional<double> m_w;  // share explained by the top 3% of workers
};

// Verdict thresholds (see derive_verdict for the reasoning).
inline constexpr double kNoStragglingBelow = 1.10;
inline constexpr double kFewWorkersMw = 0.5;
inline constexpr double kLastStageMs = 0.8;

// One line naming the likely cause.
std::string derive_verdict(const OverviewInput& in);

// A few lines for a person: S, waste, worst stage / dp rank / op type, M_S, M_W, verdict.
std::string format_overview(const OverviewInput& in);

}  // namespace sp::whatif
