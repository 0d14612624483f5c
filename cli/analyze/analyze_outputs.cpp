// The files `analyze` writes besides the three JSON results, and the overview it prints.
#include "analyze_outputs.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "straggler_probe/whatif/report_heatmap.h"
#include "straggler_probe/whatif/report_timeline.h"

namespace sp::cli {

namespace fs = std::filesystem;
using namespace sp::whatif;

namespace {

// A file left by an earlier run is replaced (a new file), not truncated: ext4 flushes a file
// truncated and rewritten when it is closed, which costs the writer the block allocation of
// the whole timeline (SE: 14 MB) that the kernel otherwise does later, in the background.
std::ofstream open_output(const fs::path& p) {
  std::error_code none;
  fs::remove(p, none);  // absent is fine; a real problem shows when opening
  std::ofstream out(p, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return out;
}

}  // namespace

void write_timeline(const fs::path& path, const TraceTable& trace, const JobMeta& meta, const AnalysisResult& r,
                    std::vector<int64_t> steps) {
  TimelineInput in;
  in.trace = &trace;
  in.meta = &meta;
  in.real_start = r.row_real_start;
  in.real_end = r.row_real_end;
  in.ideal_start = r.row_ideal_start;
  in.ideal_end = r.row_ideal_end;
  in.steps = std::move(steps);
  std::ofstream out = open_output(path);
  write_timeline_json(in, out);
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void write_heatmap(const fs::path& path, const AnalysisResult& r) {
  HeatmapInput in{r.job_meta.trial_name, r.blocking_slowdown, r.dp_size, r.pp_size, r.worker_slowdown};
  std::ofstream out = open_output(path);
  write_heatmap_svg(in, out);
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

namespace {

std::vector<GroupSlowdown> groups_of(const std::optional<Decomposition>& d) {
  std::vector<GroupSlowdown> out;
  if (d) {
    for (const auto& g : d->overall) out.push_back({g.key, g.value});
  }
  return out;
}

}  // namespace

OverviewInput overview_input(const AnalysisResult& r, const SlowdownExplanation& ms,
                           const std::optional<SlowdownExplanation>& mw) {
  OverviewInput s;
  s.trial_name = r.job_meta.trial_name;
  s.steps = r.steps.size();
  s.slowdown = r.blocking_slowdown;
  s.launch_slowdown = r.launch_slowdown;
  s.pp_size = r.pp_size;
  s.by_stage = groups_of(r.blocking_by_stage);
  s.by_dp_rank = groups_of(r.blocking_by_dp_rank);
  s.by_optype = groups_of(r.blocking_by_optype);
  if (r.blocking_by_dp_rank) {
    for (const auto& step : r.blocking_by_dp_rank->per_step) {
      if (!step.groups.empty()) s.per_step_worst_dp_rank.push_back(step.groups.front().key);
    }
  }
  if (!r.worker_slowdown.empty()) {
    const auto it = std::max_element(r.worker_slowdown.begin(), r.worker_slowdown.end());
    const auto w = static_cast<int>(it - r.worker_slowdown.begin());
    s.worst_worker_stage = w / r.dp_size;
    s.worst_worker_dp = w % r.dp_size;
    s.worst_worker_slowdown = *it;
  }
  s.m_s = ms.rem;
  if (mw) s.m_w = mw->rem;
  return s;
}

}  // namespace sp::cli
