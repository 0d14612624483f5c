// The what-if analysis of a trace: step times (real, without launch delays, ideal), the
// slowdowns, their attribution to data-parallel ranks, pipeline stages and op types, and the
// metrics M_S and M_W. Reproduces the paper artifact's result.json / ms.json / mw.json.
//
//   Analysis a(trace, meta, {});           // all simulations of result.json
//   const AnalysisResult& r = a.result();
//   SlowdownExplanation ms = a.compute_ms();
//   std::optional<SlowdownExplanation> mw = a.compute_mw();  // needs the attribution
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "straggler_probe/whatif/lane_model.h"
#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

struct AnalyzeOptions {
  // Analyse only these steps (those absent from the trace are ignored, as the artifact does;
  // none present is an error). The dependency model, transfer times and launch delays are
  // still derived from the whole trace. Give them in command-line order with ranges expanded
  // ("12 20-23" -> 12, 20, 21, 22, 23): the artifact lists per-step attributions in the
  // iteration order of the Python set it builds from them, which depends on that order.
  std::optional<std::vector<int64_t>> steps;
  // Attribute a slowdown only when it is at least this large (else the attribution is null).
  double decompose_threshold = 1.03;
};

struct StepValue {
  int64_t step;
  double value;
};

// One attribution entry: the group's key as result.json writes it ("3" for dp rank/stage 3,
// "forward-compute" or "forward-pp-comm" for an op type), and the slowdown left when only that
// group keeps its real durations.
struct GroupValue {
  std::string key;
  double value;
};

struct StepAttribution {
  int64_t step;
  std::vector<GroupValue> groups;  // descending value (ties: ascending key order)
};

struct Decomposition {
  std::vector<GroupValue> overall;         // descending value (ties: ascending key order)
  std::vector<StepAttribution> per_step;   // steps in the order of the step slowdowns
};

struct AnalysisResult {
  JobMeta job_meta;

  // Ascending step order.
  std::vector<StepValue> step_t_base;     // traced step time
  std::vector<StepValue> step_t_nodelay;  // simulated, launch delays removed
  std::vector<StepValue> step_t_noblk;    // simulated ideal (no stragglers)

  double launch_slowdown = 1.0;           // mean base / mean no-delay
  double blocking_slowdown = 1.0;         // S = mean no-delay / mean ideal

  // Descending value.
  std::vector<StepValue> blocking_step_slowdown;
  std::vector<StepValue> launch_step_slowdown;

  // Null when the corresponding slowdown is below the threshold.
  std::optional<Decomposition> blocking_by_dp_rank, blocking_by_stage, blocking_by_optype;
  std::optional<Decomposition> launch_by_dp_rank, launch_by_stage, launch_by_optype;

  // ---- Beyond result.json: what the reports need. ----
  std::vector<int64_t> steps;  // analysed steps, ascending

  // Per trace row (same order as the TraceTable). Times are relative to the start of the row's
  // step (its earliest traced start), in seconds. Rows of steps not analysed have analysed = 0
  // and NaN ideal times.
  std::vector<double> row_real_start, row_real_end;
  std::vector<double> row_ideal_start, row_ideal_end;
  std::vector<uint8_t> row_analysed;

  // Per-worker slowdown S_w = min(S of its dp rank, S of its stage) (the paper's approximation
  // of Eq. 4), [stage * dp_size + dp_rank]; empty when the attribution was not computed.
  std::vector<double> worker_slowdown;
  int32_t dp_size = 1;
  int32_t pp_size = 1;
};

// The artifact's explain_slowdown: effect of a set of cells (a stage, some workers) on the gap
// between the no-delay timeline (tori) and the ideal (tideal).
//   rem = (tori - trem) / (tori - tideal): share removed by fixing only these cells;
//   add = (tadd - tideal) / (tori - tideal): share added back by un-fixing only these cells.
struct SlowdownExplanation {
  double trem = 0, tadd = 0, tori = 0, tideal = 0, rem = 0, add = 0;
  std::vector<int32_t> fixed_stages;  // M_S: the last stage
  std::vector<int32_t> fixed_ranks;   // M_W: the top 3% workers by S_w (global ranks)
};

class Analysis {
 public:
  // Builds the model (throws ModelError / GraphError) and runs the analysis of result.json.
  Analysis(const TraceTable& trace, const JobMeta& meta, AnalyzeOptions options = {});
  // Same, from a model built elsewhere (e.g. the online analysis); `meta` is echoed in results.
  Analysis(LaneModel model, const JobMeta& meta, AnalyzeOptions options = {});
  ~Analysis();
  Analysis(Analysis&&) noexcept;
  Analysis& operator=(Analysis&&) noexcept;

  const AnalysisResult& result() const;
  const LaneModel& model() const;

  // M_S: fix only the last pipeline stage.
  SlowdownExplanation compute_ms();
  // M_W: fix only the top ceil(3% * traced workers) by S_w. Nullopt when the attribution by dp
  // rank and stage was skipped (slowdown below the threshold): S_w is then undefined.
  std::optional<SlowdownExplanation> compute_mw();

  struct State;  // opaque: the model, the simulator and the replays M_S / M_W reuse

 private:
  std::unique_ptr<State> state_;
};

// Convenience wrappers.
AnalysisResult analyze(const TraceTable& trace, const JobMeta& meta,
                       const AnalyzeOptions& options = {});

}  // namespace sp::whatif
