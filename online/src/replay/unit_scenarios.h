// One what-if scenario per unit of ranks (a dp rank's ranks, a stage), each "this unit takes
// the alternative values, every other rank the base values", without replaying the whole step
// once per unit. Exact: the same step times as one full replay per unit (scenario_replay.h), up
// to the rounding of a different order of additions (about 1e-15 relative).
//
// Why it is exact. Every replayed time is a longest path (max-plus) through the graph, and
// ranks only meet in communication groups. Call a group *shared* when its members belong to
// more than one unit. A shared group's launch L (its members' latest start) is the max over
// units of each unit's contribution, and a unit's contribution is itself a max of
//   a_u(x)                   the longest path from the step start to x inside unit u that
//                            passes no shared group, and
//   L(g) + W_u(g, x)         for each earlier shared group g: the longest path inside u from
//                            g's launch to x that passes no other shared group,
// and likewise for the step's end (x = the sink: a rank's step-end marker minus its start
// offset). In the scenario of unit u every other unit keeps the base values, so its a and W are
// those of the base; only u's own contribution changes. Keeping, for every a(x) and W(g, x),
// the largest value over units and the runner-up from another unit gives the max over "every
// unit but u" in O(1). So per unit: one replay of u's own positions with the alternative
// values, plus one pass over the shared groups and their few edges; and once per step: a
// sweep of each unit from its start and from each of its shared groups (with base values).
//
// When that costs more than replaying the whole step once per unit (many shared groups, as
// between pipeline stages), run() replays each unit's scenario in full instead.
#pragma once

#include <cstdint>
#include <vector>

#include "lane_batch.h"
#include "replay_plan.h"
#include "scenario_values.h"

namespace sp::online {

enum class UnitMethod : uint8_t { kAuto, kBoundary, kFullReplays };

struct UnitScenarioStats {
  bool boundary = false;           // the boundary method ran (else one full replay per unit)
  size_t shared_groups = 0;        // groups whose members span more than one unit
  size_t edges = 0;                // (shared group or step end) <- shared group edges kept
  size_t sweep_positions = 0;      // positions visited by the per-step sweeps
  size_t full_replays = 0;         // whole-step replays run instead (one per unit)
};

class UnitScenarios {
 public:
  // batch: where the full replays run when they are the cheaper (shared with the caller's other
  // batched scenarios: its buffer is the largest of the step's).
  explicit UnitScenarios(LaneBatch* batch) : batch_(*batch) {}

  // Step time of each unit's scenario into (*step_times)[u]: ranks with unit_of_rank[r] == u
  // take `alt`, all others `base`. units = number of units (ids 0 .. units-1).
  void run(const ReplayPlan& plan, const PlanValues& values,
           const std::vector<int32_t>& unit_of_rank, int32_t units, ValueSide base, ValueSide alt,
           UnitMethod method, std::vector<double>* step_times);

  const UnitScenarioStats& stats() const { return stats_; }

  // The largest value over units and the largest from a unit other than the largest's.
  struct Top2 {
    double best, second;
    int32_t best_unit;
    void add(double v, int32_t unit);
    double without(int32_t unit) const { return unit == best_unit ? second : best; }
  };

 private:
  struct Edge {
    int32_t from;  // shared group index
    Top2 w;
  };
  void layout(const ReplayPlan& plan, const std::vector<int32_t>& unit_of_rank, int32_t units);
  // Whether layout()'s inputs are the last call's (then its outputs still hold): the plan's
  // ranks and units and the ranks' units. Several runs a step share a layout (the metrics' and
  // the null draws' of one family), and comparing costs far less than laying out.
  bool same_layout(const ReplayPlan& plan, const std::vector<int32_t>& unit_of_rank, int32_t units) const;
  size_t sweep_cost(const ReplayPlan& plan, size_t limit) const;
  void summarise(const ReplayPlan& plan);
  void sweep(const ReplayPlan& plan, int32_t unit, int32_t entry_shared);
  void add_edges(int32_t from);
  double unit_step_time(const ReplayPlan& plan, int32_t unit);
  void full_replays(const ReplayPlan& plan, const PlanValues& values, int32_t units,
                    ValueSide base, ValueSide alt, std::vector<double>* step_times);

  UnitScenarioStats stats_;
  int32_t units_ = 0;
  // The two sides' values, the caller's (valid during run()).
  const double* work_base_ = nullptr;
  const double* delay_base_ = nullptr;
  const double* work_alt_ = nullptr;
  const double* delay_alt_ = nullptr;
  // layout()'s inputs, for same_layout().
  std::vector<int32_t> layout_rank_at_, layout_unit_begin_, layout_unit_of_rank_;
  int32_t layout_units_ = -1;
  // summarise()'s inputs besides the layout: the base side's values, bit for bit. The null
  // draws of a step keep the metrics' base side (the ideal) and change only the other, so
  // their summary is the metrics' one.
  bool same_summary(size_t positions) const;
  void remember_summary(size_t positions);
  bool summary_valid_ = false;
  std::vector<double> summary_work_, summary_delay_;
  std::vector<int32_t> unit_at_;            // per position: its unit
  std::vector<int32_t> unit_pos_begin_, unit_pos_;  // CSR: positions of each unit, ascending
  std::vector<int32_t> shared_of_;          // per plan unit: shared group index, or -1
  std::vector<int32_t> shared_unit_;        // per shared group: its plan unit
  std::vector<int32_t> members_begin_, members_;  // CSR: the distinct units of each shared group
  // Per shared group (and, at index shared_unit_.size(), the step end): a(x) over units and
  // the in-edges W(g, x), CSR by x.
  std::vector<Top2> a_;
  std::vector<int32_t> edge_begin_;
  std::vector<Edge> edges_;
  struct RawEdge {
    int32_t to;
    Edge edge;
  };
  std::vector<RawEdge> raw_edges_;
  // Sweep scratch: a value per position, valid where stamp_ == the current sweep.
  std::vector<double> value_;
  std::vector<uint32_t> stamp_;
  uint32_t sweep_id_ = 0;
  std::vector<double> found_;               // per shared group + step end: this sweep's max
  std::vector<int32_t> found_list_;
  std::vector<Top2> pending_;               // per x: W(from, x) over the units swept so far
  std::vector<int32_t> pending_list_;
  std::vector<double> launch_;              // per shared group: L in the current unit scenario
  LaneBatch& batch_;
  std::vector<LaneBatch::Lane> lanes_;
};

}  // namespace sp::online
