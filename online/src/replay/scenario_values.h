// What a node's work and launch delay are in a what-if scenario: its recorded (real) values or
// its ideal ones (ideal_window.h), and, for a scenario, which of the two each node takes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ideal/ideal_window.h"
#include "replay_plan.h"
#include "model/step_model.h"

namespace sp::online {

// Per StepModel node. A step start's delay is its rank's offset in every scenario; a step-end
// marker has no work and the ideal delay of the step-end key.
struct NodeValues {
  std::vector<double> real_work, real_delay, ideal_work, ideal_delay;
};

// Ideal duration and launch delay of every node. A compute op split into segments has its ideal
// spread over the segments in proportion to their recorded lengths.
void compute_node_values(const StepModel& model, const Ideals& ideals, NodeValues* out);

// A step start's delay is its rank's offset. kRecorded and kZero keep the recorded offsets (the
// real replay, and the real one without launch delays); kReal and kIdeal take the offsets an
// ideal previous step would have left (settle_start_offsets, slowdown_metrics.cpp), so that no
// what-if scenario inherits the previous step's straggling.
enum class DelayMode : uint8_t { kReal = 0, kIdeal = 1, kZero = 2, kRecorded = 3 };
constexpr size_t kDelayModes = 4;

// One side of a scenario: recorded or ideal work, and a launch-delay mode.
struct ValueSide {
  bool real_work = false;
  DelayMode delay = DelayMode::kIdeal;
};

// The same values per plan position (replay_plan.h), for the replay kernels.
struct PlanValues {
  std::array<std::vector<double>, 2> work;   // [0] recorded, [1] ideal
  std::array<std::vector<double>, kDelayModes> delay;  // by DelayMode
  std::vector<int32_t> type_at;              // op type; num_types for step starts and ends
  size_t num_types = 0;
};

void gather_plan_values(const StepModel& model, const NodeValues& values, const ReplayPlan& plan,
                        PlanValues* out);

// One scenario: a node keeps its recorded work when its type or its rank says so (else it
// takes the ideal), and the launch delay of its rank's mode. A step start keeps its offset.
struct Selection {
  std::vector<uint8_t> type_real;   // per type slot (num_types + 1; the last: starts/markers)
  std::vector<uint8_t> rank_real;   // per rank
  std::vector<uint8_t> rank_delay;  // per rank: a DelayMode

  // Every type and rank recorded (real) or ideal, with one delay mode for everyone.
  void reset(size_t num_types, size_t world, bool real_work, DelayMode delay);
};

// The work and delay of every position under `selection`, for kernels that take per-position
// values (unit_scenarios.h).
void select_values(const ReplayPlan& plan, const PlanValues& values, const Selection& selection,
                   std::vector<double>* work, std::vector<double>* delay);

}  // namespace sp::online
